package ermcmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/erm"
	"github.com/privtrain/privtrain/erm/data"
	"github.com/privtrain/privtrain/internal/privrand"
)

// seedFlag is -seed: a seed ≥ 0; a negative one is refused, as cmd/train's unsigned
// -seed refuses it. Left out (stored as −1), the noise has a secure key; it then
// prints as "", so -help shows only the usage's "(default: <privrand.SecureOrigin>)" and not also
// "(default -1)".
type seedFlag struct{ seed *int64 }

func (f seedFlag) String() string {
	if f.seed == nil || *f.seed < 0 {
		return ""
	}
	return strconv.FormatInt(*f.seed, 10)
}

func (f seedFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return errors.New("want a seed ≥ 0")
	}
	*f.seed = v
	return nil
}

// run executes the command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "reproduce" {
		return runReproduce(args[1:], stdout, stderr)
	}
	return runTrain(args, stdout, stderr)
}

// trainOptions are the flags of a training run.
type trainOptions struct {
	solver, loss, dataPath, format string
	synthetic, raw, jsonOut        bool
	normalize                      bool
	// normalizedByDefault: -synthetic data normalised because the solver needs rows of
	// norm ≤ 1 (unitRows), without -normalize.
	normalizedByDefault         bool
	n, d                        int
	dataSeed                    uint64
	epsilon, delta              float64
	lambda, l1, radius          float64
	iters, epochs, batch, inner int
	clip, step, eta, x0         float64
	newtonSteps                 int
	spectralL                   bool
	sampling                    string
	bb                          bool   // -bb: SVRG-BB step sizes (dp-svrg)
	output                      string // -output: last or random-iterate (dp-gd-pl)
	ball                        string // -ball: l2 (default) or l1, dp-accmd's constraint
	seed                        int64
	budget                      ermBudget // -budget-store (budget.go)
	paperC                      float64   // -paper-noise (papernoise.go); 0: proven calibration
	paperSet                    bool
}

// solverInfo describes a solver for -help and the report.
type solverInfo struct {
	paper string
	pure  bool // pure ε-DP (Laplace), δ unused
}

var solvers = map[string]solverInfo{
	"dp-gd":         {"DP-GD, Laplace (Kuru et al.)", true},
	"dp-shb":        {"DP heavy ball (Kuru et al.)", true},
	"dp-nag":        {"DP-NAG (Kuru et al.)", true},
	"dp-nag-opt":    {"DP-NAG with optimal noise split and T re-selection (Kuru et al.)", true},
	"dp-masg":       {"DP-MASG (Kuru et al.)", true},
	"dp-masg-opt":   {"DP-MASG with optimal noise split (Kuru et al.)", true},
	"dp-gd-pl":      {"DP-GD for PL objectives, Gaussian (Wang, Ye, Xu)", false},
	"dp-svrg":       {"DP-SVRG, proximal (Wang, Ye, Xu)", false},
	"dp-svrg++":     {"DP-SVRG++ (Wang, Ye, Xu)", false},
	"dp-accmd":      {"DP-AccMD on the L2 ball (Wang, Ye, Xu)", false},
	"dp-scd":        {"dual DP-SCD (Damaskinos et al.)", false},
	"seq-dp-scd":    {"sequential DP-SCD baseline (Damaskinos et al.)", false},
	"primal-dp-scd": {"primal DP-SCD (Damaskinos et al.)", false},
}

func solverNames() string {
	var names []string
	for n := range solvers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// parseTrain parses erm's flags; a nil result has printed the help or a usage error, and
// code is the exit status.
func parseTrain(args []string, stdout, stderr io.Writer) (o *trainOptions, code int) {
	o = &trainOptions{}
	fs := flag.NewFlagSet("erm", flag.ContinueOnError)
	fs.StringVar(&o.solver, "solver", "dp-scd", "solver (see the list above)")
	fs.StringVar(&o.loss, "loss", "logistic", "loss: logistic, squared or hinge")
	fs.StringVar(&o.dataPath, "data", "", "LIBSVM or CSV data file (gzip allowed)")
	fs.StringVar(&o.format, "format", "", "data format: libsvm or csv (default: by file name)")
	fs.BoolVar(&o.synthetic, "synthetic", false, "use the DP accelerated methods paper's synthetic data instead of -data")
	fs.IntVar(&o.n, "n", 100000, "examples of -synthetic data")
	fs.IntVar(&o.d, "d", 20, "features of -synthetic data")
	fs.Uint64Var(&o.dataSeed, "data-seed", 1, "seed of -synthetic data")
	fs.BoolVar(&o.normalize, "normalize", false, "normalise -synthetic data to unit rows (the default for dp-scd and seq-dp-scd, which need rows of norm ≤ 1; the other solvers get the paper's data as drawn); files are always normalised unless -raw")
	fs.BoolVar(&o.raw, "raw", false, "do not normalise a -data file, or -synthetic data for dp-scd and seq-dp-scd (private solvers then refuse it: no declared norm bound)")
	fs.Float64Var(&o.epsilon, "epsilon", 1, "privacy budget ε > 0 (inf: noise off, the non-private reference)")
	fs.Float64Var(&o.delta, "delta", 1e-3, "δ in (0,1) of the (ε, δ) solvers (the Laplace solvers are pure ε-DP)")
	fs.Float64Var(&o.lambda, "lambda", 0.01, "ridge coefficient λ of (λ/2)‖w‖² (the accelerated paper's λ‖x‖² with λ = 0.01 is 0.02 here)")
	fs.Float64Var(&o.l1, "l1", 0, "L1 coefficient (dp-svrg, dp-svrg++)")
	fs.Float64Var(&o.radius, "radius", 0, "radius of the constraint ball (dp-accmd; required there)")
	fs.StringVar(&o.ball, "ball", "l2", "dp-accmd's constraint: l2 (‖w‖₂ ≤ -radius) or l1 (‖w‖₁ ≤ -radius, p-norm mirror map)")
	fs.IntVar(&o.iters, "iters", 100, "iterations T of the gradient methods (0: the theorem's default where there is one)")
	fs.IntVar(&o.epochs, "epochs", 0, "epochs of the SVRG and SCD methods (0: default)")
	fs.IntVar(&o.batch, "batch", 0, "batch size: m (accelerated), b (SVRG), L (SCD); 0: default")
	fs.IntVar(&o.inner, "inner", 0, "inner steps m of dp-svrg/dp-svrg++ (0: default)")
	fs.Float64Var(&o.clip, "clip", 0, "bound C on DP-SCD's coordinate steps (0: 1)")
	fs.Float64Var(&o.step, "step", 1, "step multiplier c of the accelerated methods (α = c/L)")
	fs.Float64Var(&o.eta, "eta", 0, "step size η of dp-gd-pl/dp-svrg/dp-svrg++ (0: the paper's)")
	fs.Float64Var(&o.x0, "x0", 0, "start every coordinate at this value (the accelerated paper uses 10)")
	fs.StringVar(&o.sampling, "sampling", "", "batches of the SCD and SVRG methods: poisson (what the accountant analyses), shuffled (the papers' fixed-size batches) or one (dp-svrg/dp-svrg++: exactly -batch uniform examples per inner step, Algorithm 1; shuffled is the same there) (default: one for dp-svrg and dp-svrg++, poisson otherwise)")
	fs.BoolVar(&o.bb, "bb", false, "dp-svrg: Barzilai–Borwein step sizes (SVRG-BB) from epoch 3 on, -eta the first two epochs'; needs -inner")
	fs.StringVar(&o.output, "output", "last", "dp-gd-pl: release the last iterate (last) or x_k for k uniform in {0, …, T−1} (random-iterate: Theorem 6.3, non-convex)")
	fs.IntVar(&o.newtonSteps, "newton-steps", 0, "Newton steps of DP-SCD's logistic update (0: exact, 1: the authors' code)")
	fs.BoolVar(&o.spectralL, "spectral-l", false, "use the accelerated paper's data-dependent L = λ_max(XᵀX/n) + λ (not private) for the step size")
	o.seed = -1
	fs.Var(seedFlag{&o.seed}, "seed", "noise seed `N` ≥ 0 for a reproducible run (default: "+privrand.SecureOrigin+")")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object")
	addBudgetFlag(fs, &o.budget)
	addPaperNoiseFlag(fs, o)
	// A bad flag prints the help too: the solvers are listed there.
	cmd := cli.Command{Name: "erm", Flags: fs, Header: fmt.Sprintf("usage: erm [flags]  |  erm reproduce [flags]\n\nSolvers: %s\n\nFlags:\n", solverNames()),
		Verbatim: true, HelpOnError: true, ArgsHint: " (flags only; the subcommand is reproduce)"}
	if code, ok := cmd.Parse(args, stdout, stderr); !ok {
		return nil, code
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(stderr, err)
		return nil, exit.Usage
	}
	return o, exit.OK
}

// unitRows are the solvers that need examples of norm ≤ 1: -synthetic data, drawn in
// [0,1]^d (norm up to √d), are normalised for them unless -raw.
var unitRows = map[string]bool{"dp-scd": true, "seq-dp-scd": true}

func (o *trainOptions) validate() error {
	if _, ok := solvers[o.solver]; !ok {
		return exit.Usagef("erm: -solver %q: unknown (want one of %s)", o.solver, solverNames())
	}
	if _, err := lossByName(o.loss); err != nil {
		return err
	}
	switch {
	case o.synthetic && o.dataPath != "":
		return exit.Usagef("erm: -data and -synthetic: give one of them")
	case !o.synthetic && o.dataPath == "":
		return exit.Usagef("erm: -data: missing (or use -synthetic)")
	}
	if o.format != "" && o.format != "libsvm" && o.format != "csv" {
		return exit.Usagef("erm: -format %q: want libsvm or csv", o.format)
	}
	if o.synthetic && (o.n < 1 || o.d < 1) {
		return exit.Usagef("erm: -n and -d must be ≥ 1 (got %d, %d)", o.n, o.d)
	}
	if o.normalize && o.raw {
		return exit.Usagef("erm: -normalize and -raw: give one of them")
	}
	if o.synthetic && !o.normalize && !o.raw && unitRows[o.solver] {
		o.normalize, o.normalizedByDefault = true, true
	}
	if !(o.epsilon > 0) {
		return exit.Usagef("erm: -epsilon %v: must be > 0 (inf for no noise)", o.epsilon)
	}
	if !solvers[o.solver].pure && !math.IsInf(o.epsilon, 1) && !(o.delta > 0 && o.delta < 1) {
		return exit.Usagef("erm: -delta %v: must be in (0, 1)", o.delta)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"-lambda", o.lambda}, {"-l1", o.l1}, {"-radius", o.radius}, {"-clip", o.clip}, {"-eta", o.eta}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			return exit.Usagef("erm: %s %v: must be a finite number ≥ 0", f.name, f.v)
		}
	}
	if !(o.step > 0) || math.IsInf(o.step, 1) {
		return exit.Usagef("erm: -step %v: must be a finite number > 0", o.step)
	}
	if math.IsNaN(o.x0) || math.IsInf(o.x0, 0) {
		return exit.Usagef("erm: -x0 %v: must be finite", o.x0)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"-iters", o.iters}, {"-epochs", o.epochs}, {"-batch", o.batch}, {"-inner", o.inner}, {"-newton-steps", o.newtonSteps}} {
		if f.v < 0 {
			return exit.Usagef("erm: %s %d: must be ≥ 0", f.name, f.v)
		}
	}
	svrg := o.solver == "dp-svrg" || o.solver == "dp-svrg++"
	switch {
	case o.sampling == "" && svrg:
		o.sampling = "one"
	case o.sampling == "":
		o.sampling = "poisson"
	case o.sampling == "one" && !svrg:
		return exit.Usagef("erm: -sampling one: only dp-svrg and dp-svrg++ take it (-solver %s: use poisson or shuffled)", o.solver)
	case o.sampling != "poisson" && o.sampling != "shuffled" && o.sampling != "one":
		return exit.Usagef("erm: -sampling %q: want poisson, shuffled or one", o.sampling)
	}
	if o.bb && o.solver != "dp-svrg" {
		return exit.Usagef("erm: -bb: only dp-svrg takes Barzilai–Borwein step sizes (-solver %s)", o.solver)
	}
	if o.output != "last" && o.output != "random-iterate" {
		return exit.Usagef("erm: -output %q: want last or random-iterate", o.output)
	}
	if o.output == "random-iterate" && o.solver != "dp-gd-pl" {
		return exit.Usagef("erm: -output random-iterate: only dp-gd-pl takes it (-solver %s)", o.solver)
	}
	if o.ball != "l2" && o.ball != "l1" {
		return exit.Usagef("erm: -ball %q: want l2 or l1", o.ball)
	}
	if o.ball == "l1" && o.solver != "dp-accmd" {
		return exit.Usagef("erm: -ball l1: only -solver dp-accmd runs on the L1 ball")
	}
	if o.solver == "dp-accmd" && o.radius == 0 {
		if o.ball == "l1" {
			return exit.Usagef("erm: -radius: dp-accmd -ball l1 needs an L1-ball radius (-radius > 0)")
		}
		return exit.Usagef("erm: -radius: dp-accmd needs an L2-ball constraint (-radius > 0)")
	}
	return o.validatePaperNoise()
}

func lossByName(name string) (erm.Loss, error) {
	switch name {
	case "logistic":
		return erm.Logistic{}, nil
	case "squared":
		return erm.Squared{}, nil
	case "hinge":
		return erm.Hinge{}, nil
	}
	return nil, exit.Usagef("erm: -loss %q: want logistic, squared or hinge", name)
}

// buildSolver turns the flags into a solver for problem p.
func (o *trainOptions) buildSolver(p *erm.Problem) erm.Solver {
	var start []float64
	if o.x0 != 0 {
		start = make([]float64, p.Dim())
		for j := range start {
			start[j] = o.x0
		}
	}
	ls := erm.LaplaceSettings{Epsilon: o.epsilon, Iterations: o.iters, BatchSize: o.batch, StepMult: o.step, Start: start}
	if o.spectralL {
		ls.Smoothness = p.SpectralSmoothness()
	}
	sampling := erm.Poisson
	switch o.sampling {
	case "shuffled":
		sampling = erm.Shuffled
	case "one":
		sampling = erm.One
	}
	switch o.solver {
	case "dp-gd":
		return &erm.GD{LaplaceSettings: ls}
	case "dp-shb":
		return &erm.HeavyBall{LaplaceSettings: ls}
	case "dp-nag":
		return &erm.NAG{LaplaceSettings: ls}
	case "dp-nag-opt":
		return &erm.NAG{LaplaceSettings: ls, Optimal: true}
	case "dp-masg":
		return &erm.MASG{LaplaceSettings: ls}
	case "dp-masg-opt":
		return &erm.MASG{LaplaceSettings: ls, Optimal: true}
	case "dp-gd-pl":
		return &erm.GDPL{Epsilon: o.epsilon, Delta: o.delta, Iterations: o.iters, StepSize: o.eta, Start: start, RandomIterate: o.output == "random-iterate", PaperConstant: o.paperC}
	case "dp-svrg":
		return &erm.SVRG{Epsilon: o.epsilon, Delta: o.delta, Epochs: o.epochs, InnerSteps: o.inner, BatchSize: o.batch, StepSize: o.eta, Start: start, Sampling: sampling, BB: o.bb, PaperConstant: o.paperC}
	case "dp-svrg++":
		return &erm.SVRGPlusPlus{Epsilon: o.epsilon, Delta: o.delta, Epochs: o.epochs, InnerSteps: o.inner, BatchSize: o.batch, StepSize: o.eta, Start: start, Sampling: sampling, PaperConstant: o.paperC}
	case "dp-accmd":
		if o.ball == "l1" {
			return &erm.AccMD{Epsilon: o.epsilon, Delta: o.delta, Iterations: o.iters, L1Radius: o.radius}
		}
		return &erm.AccMD{Epsilon: o.epsilon, Delta: o.delta, Iterations: o.iters}
	case "dp-scd":
		return &erm.SCD{Epsilon: o.epsilon, Delta: o.delta, Epochs: o.epochs, BatchSize: o.batch, Clip: o.clip, NewtonSteps: o.newtonSteps, Sampling: sampling}
	case "seq-dp-scd":
		return &erm.SequentialSCD{Epsilon: o.epsilon, Delta: o.delta, Epochs: o.epochs, BatchSize: o.batch, Clip: o.clip, NewtonSteps: o.newtonSteps, Sampling: sampling}
	case "primal-dp-scd":
		return &erm.PrimalSCD{Epsilon: o.epsilon, Delta: o.delta, Epochs: o.epochs, BatchSize: o.batch, Clip: o.clip}
	}
	panic("unreachable: solver validated")
}

// loadData reads or draws the data set and prepares it for the loss.
func (o *trainOptions) loadData(loss erm.Loss) (*data.Dataset, string, error) {
	if o.synthetic {
		ds, err := data.Synthetic(o.n, o.d, o.dataSeed)
		if err != nil {
			return nil, "", exit.Usagef("erm: -synthetic: %v", err)
		}
		o.budget.fingerprint = ds.Fingerprint()
		if !loss.Classification() {
			return nil, "", exit.Usagef("erm: -loss %s: the synthetic data are a classification task", loss.Name())
		}
		desc := fmt.Sprintf("synthetic (Kuru et al. Sec. 5, seed %d)", o.dataSeed)
		if o.normalize {
			ds.Normalize()
			desc += ", normalised to unit rows"
			if o.normalizedByDefault {
				desc += fmt.Sprintf(" (-solver %s needs rows of norm ≤ 1; -raw keeps the data as drawn)", o.solver)
			}
		}
		return ds, desc, nil
	}
	ds, err := data.ReadFile(o.dataPath, data.Format(o.format))
	if err != nil {
		return nil, "", exit.Usagef("erm: -data: %v", err)
	}
	o.budget.fingerprint = ds.Fingerprint()
	if loss.Classification() {
		if err := ds.BinaryLabels(); err != nil {
			return nil, "", exit.Usagef("erm: -data %s with -loss %s: %v", o.dataPath, loss.Name(), err)
		}
	}
	desc := o.dataPath
	if !o.raw {
		ds.Normalize()
		desc += " (normalised: max-abs per feature, unit rows)"
	}
	return ds, desc, nil
}

// report is what a run prints.
type report struct {
	Solver      string   `json:"solver"`
	Method      string   `json:"method"`
	Loss        string   `json:"loss"`
	Data        string   `json:"data"`
	N           int      `json:"n"`
	D           int      `json:"d"`
	Lambda      float64  `json:"lambda"`
	L1          float64  `json:"l1,omitempty"`
	Radius      float64  `json:"radius,omitempty"`
	Ball        string   `json:"ball,omitempty"` // "l1" for -ball l1; absent for the L2 ball
	Objective   float64  `json:"objective"`
	Optimum     float64  `json:"optimum"`
	OptimumGap  float64  `json:"optimum_certified_gap"`
	ExcessRisk  float64  `json:"excess_risk"`
	Accuracy    *float64 `json:"accuracy,omitempty"`
	MSE         *float64 `json:"mse,omitempty"`
	Epsilon     *float64 `json:"epsilon"` // null when the noise is off (or, with paper_noise, has no finite proven bound)
	Delta       float64  `json:"delta"`
	Iterations  int      `json:"iterations"`
	Calibration string   `json:"calibration"`
	NoiseSeed   string   `json:"noise_seed"`
	// Paper is set with -paper-noise: the run is not DP at its printed_epsilon, and
	// epsilon is the proven ε of the σ used.
	Paper *paperReport `json:"paper_noise,omitempty"`
}

func runTrain(args []string, stdout, stderr io.Writer) int {
	o, code := parseTrain(args, stdout, stderr)
	if o == nil {
		return code
	}
	o.budget.command, o.budget.stderr = cli.CommandLine("erm", args), stderr
	rep, err := o.train()
	if err != nil {
		var ue *exit.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, ue.Msg)
			return exit.Usage
		}
		fmt.Fprintln(stderr, "erm:", err)
		return exit.Failure
	}
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(stderr, "erm:", err)
			return exit.Failure
		}
		return exit.OK
	}
	printReport(stdout, rep)
	return exit.OK
}

func (o *trainOptions) train() (*report, error) {
	loss, _ := lossByName(o.loss)
	ds, desc, err := o.loadData(loss)
	if err != nil {
		return nil, err
	}
	p := &erm.Problem{Data: ds, Loss: loss, Lambda: o.lambda, L1: o.l1, Radius: o.radius}
	if o.ball == "l1" {
		p.Radius = 0 // the L1 ball is the solver's (AccMD.L1Radius)
	}
	if err := p.Validate(); err != nil {
		return nil, exit.Usagef("erm: -data: %v", err)
	}
	var noise *rand.Rand
	seedDesc := privrand.SecureOrigin
	if o.seed >= 0 {
		noise = erm.NewNoise(uint64(o.seed))
		seedDesc = fmt.Sprintf("%d (reproducible: keep it secret if the model is released)", o.seed)
	} else if noise, err = erm.NewSecureNoise(); err != nil {
		return nil, err
	}
	name := o.dataPath
	if o.synthetic {
		name = fmt.Sprintf("-synthetic -n %d -d %d -data-seed %d", o.n, o.d, o.dataSeed)
	}
	spend, err := o.reserveBudget(name)
	if err != nil {
		return nil, err
	}
	res, err := o.buildSolver(p).Solve(p, noise)
	refused := errors.Is(err, erm.ErrInvalid) || errors.Is(err, erm.ErrUnsupported) || errors.Is(err, erm.ErrNoBound)
	o.settleBudget(spend, res, err, refused)
	if err != nil {
		if refused {
			hint := ""
			if o.synthetic && !o.normalize && strings.Contains(err.Error(), "examples of norm") {
				hint = " (add -normalize)"
				if o.raw {
					hint = " (leave out -raw)"
				}
			}
			return nil, exit.Usagef("erm: -solver %s: %s%s", o.solver, strings.TrimPrefix(err.Error(), "erm: "), hint)
		}
		return nil, err
	}
	var opt *erm.Optimum
	if o.ball == "l1" {
		opt, err = erm.L1BallOptimum(p, o.radius)
	} else {
		opt, err = erm.FindOptimum(p)
	}
	if err != nil {
		return nil, fmt.Errorf("reference optimum: %w", err)
	}
	rep := &report{
		Solver: o.solver, Method: solvers[o.solver].paper, Loss: loss.Name(), Data: desc,
		N: ds.Len(), D: ds.Dim(), Lambda: o.lambda, L1: o.l1, Radius: o.radius,
		Objective: p.Value(res.X), Optimum: opt.Value, OptimumGap: opt.Gap,
		ExcessRisk: opt.ExcessRisk(p, res.X), Delta: res.Delta, Iterations: res.Iterations,
		Calibration: res.Calibration, NoiseSeed: seedDesc,
	}
	if o.ball == "l1" {
		rep.Ball, rep.Method = "l1", "DP-AccMD on the L1 ball (Wang, Ye, Xu)"
	}
	if !math.IsInf(res.Epsilon, 1) {
		e := res.Epsilon
		rep.Epsilon = &e
	}
	if res.Paper != nil {
		paperFields(rep, res)
	}
	if loss.Classification() {
		a := erm.Accuracy(ds, res.X)
		rep.Accuracy = &a
	} else {
		m := erm.MSE(ds, res.X)
		rep.MSE = &m
	}
	return rep, nil
}

func printReport(w io.Writer, r *report) {
	fmt.Fprintf(w, "solver       %s: %s\n", r.Solver, r.Method)
	fmt.Fprintf(w, "data         %s: n = %d, d = %d\n", r.Data, r.N, r.D)
	fmt.Fprintf(w, "problem      %s loss, λ = %g", r.Loss, r.Lambda)
	if r.L1 > 0 {
		fmt.Fprintf(w, ", L1 = %g", r.L1)
	}
	if r.Radius > 0 && r.Ball == "l1" {
		fmt.Fprintf(w, ", ‖w‖₁ ≤ %g", r.Radius)
	} else if r.Radius > 0 {
		fmt.Fprintf(w, ", ‖w‖ ≤ %g", r.Radius)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "objective    %.8g\n", r.Objective)
	fmt.Fprintf(w, "optimum      %.8g (certified within %.2g)\n", r.Optimum, r.OptimumGap)
	fmt.Fprintf(w, "excess risk  %.6g\n", r.ExcessRisk)
	if r.Accuracy != nil {
		fmt.Fprintf(w, "accuracy     %.4f (training data)\n", *r.Accuracy)
	}
	if r.MSE != nil {
		fmt.Fprintf(w, "mse          %.6g (training data)\n", *r.MSE)
	}
	if r.Paper != nil {
		fmt.Fprintf(w, "privacy      %s\n", r.Paper.Note)
	} else if r.Epsilon == nil {
		fmt.Fprintf(w, "privacy      none: ε = ∞ (noise off)\n")
	} else if r.Delta == 0 {
		fmt.Fprintf(w, "privacy      ε = %.6g, δ = 0 (pure DP)\n", *r.Epsilon)
	} else {
		fmt.Fprintf(w, "privacy      ε = %.6g, δ = %g\n", *r.Epsilon, r.Delta)
	}
	fmt.Fprintf(w, "noise        %s\n", r.Calibration)
	fmt.Fprintf(w, "noise seed   %s\n", r.NoiseSeed)
	fmt.Fprintf(w, "iterations   %d\n", r.Iterations)
}
