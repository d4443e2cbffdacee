package auditcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/privtrain/privtrain/audit"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/privrand"
)

// exitFlagged is audit's own exit status (the others are package exit's): the empirical
// lower bound exceeds the accountant's ε.
const exitFlagged = 3

const usage = `usage: audit [flags]

Trains logistic regression privately (DP-SGD: Poisson sampling, flat clipping,
Gaussian noise, the RDP accountant) once on MNIST digits plus m canaries, each
included by a fair coin, and reports a lower bound on ε from the number of
correct membership guesses (Steinke, Nasr & Jagielski, NeurIPS 2023, Theorem 1),
beside the ε the accountant reports. A bound above the accountant's ε means the
mechanism does not deliver its guarantee.

-mode multi-run instead trains R short runs (-runs, default 200) on -filler blank
examples plus, by a fair coin per run, one canary, and scores each run by what a
white-box auditor sees in every step's update (its norm reveals the normaliser,
its canary row the canary): the same theorem with m = R. It flags normalisation
by the realised batch, which the one-run audit cannot see. Its defaults: ε = 1.5,
3 filler examples, batch 2, 50 epochs (100 steps), 1024 inputs; -canaries, -real,
-resume-after and -score apply to one-run only, -runs, -filler and -dim to
multi-run only.

Flags:
`

type options struct {
	cfg     audit.Config
	multi   audit.MultiConfig
	mode    string
	seed    int64
	guesses string
	score   string
	json    bool
	// budgetStore is -budget-store (budget.go).
	budgetStore string
}

func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &o.cfg
	fs.IntVar(&c.Canaries, "canaries", 5000, fmt.Sprintf("number of canaries m (at most %d), each included with probability 1/2", audit.MaxCanaries))
	fs.IntVar(&c.RealExamples, "real", 1000, "real training examples (digits of the embedded MNIST sample)")
	fs.IntVar(&c.BatchSize, "batch", 0, "expected batch size b (0: n/10); q = b/n")
	fs.IntVar(&c.Epochs, "epochs", 40, "epochs; the run has epochs·⌈n/b⌉ steps")
	fs.Float64Var(&c.Epsilon, "epsilon", 2, "target ε: the noise is calibrated for it")
	fs.Float64Var(&c.NoiseMultiplier, "noise", 0, "fixed noise multiplier z instead of -epsilon")
	fs.Float64Var(&c.Delta, "delta", 1e-5, "δ of the accountant's ε and of the bound")
	fs.Float64Var(&c.Clip, "clip", 0.1, "flat clipping norm C")
	fs.Float64Var(&c.LearningRate, "lr", 0, "SGD learning rate (0: small enough that every canary's gradient keeps norm C)")
	fs.Float64Var(&c.Confidence, "confidence", 0.95, "confidence of the lower bound, in (0, 1)")
	fs.StringVar(&o.guesses, "guesses", "", "comma-separated even guess counts r to try, split over the confidence (default 20,50,100,… up to m)")
	fs.IntVar(&c.ResumeAfter, "resume-after", 0, "checkpoint after this many steps and finish in a restored trainer (audits resuming)")
	fs.Int64Var(&o.seed, "seed", -1, "seed for coins, weights, sampling and noise (reproducible; default "+privrand.SecureOrigin+")")
	fs.StringVar(&o.score, "score", "step-likelihood", "canary score: step-likelihood (per-step likelihood ratio) or accumulated-update (final minus initial weights)")
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object")
	fs.StringVar(&o.mode, "mode", "one-run", "one-run (m canaries, one training run) or multi-run (one canary in each of -runs runs)")
	fs.IntVar(&o.multi.Runs, "runs", 200, "multi-run: training runs R, one canary each")
	fs.IntVar(&o.multi.Filler, "filler", 3, "multi-run: blank examples in every run besides the canary")
	fs.IntVar(&o.multi.Dim, "dim", 1024, "multi-run: input dimension (the model has 2·dim parameters)")
	addBudgetFlag(fs, &o.budgetStore)
	return fs
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlagSet(&o)
	cmd := cli.Command{Name: "audit", Flags: fs, Header: usage, Verbatim: true, ArgsHint: " (see audit -help)", CPU: true}
	if code, ok := cmd.Parse(args, stdout, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := o.check(set); err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return exit.Usage
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var res audit.Result
	var err error
	if o.mode == "multi-run" {
		res, err = audit.RunMulti(ctx, o.multi)
	} else {
		spend, berr := o.reserveBudget(cli.CommandLine("audit", args), stderr)
		if berr != nil {
			fmt.Fprintf(stderr, "audit: %s\n", exit.OneLine(berr.Error()))
			return exit.Status(berr)
		}
		res, err = audit.Run(ctx, o.cfg)
		spend.settle(res, err)
	}
	if err != nil {
		// The library's errors start with its package name, which is also this command's.
		fmt.Fprintf(stderr, "audit: %s\n", strings.TrimPrefix(err.Error(), "audit: "))
		if errors.Is(err, audit.ErrConfig) {
			return exit.Usage
		}
		if ctx.Err() != nil {
			return exit.Interrupted
		}
		return exit.Failure
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "audit: %v\n", err)
			return exit.Failure
		}
	} else {
		report(stdout, res)
	}
	if res.Flagged {
		return exitFlagged
	}
	return exit.OK
}

// check validates the flags that audit.Run would otherwise default silently, and names
// the flag at fault.
func (o *options) check(set map[string]bool) error {
	c := &o.cfg
	only := map[string][]string{"one-run": {"canaries", "real", "resume-after", "score"}, "multi-run": {"runs", "filler", "dim"}}
	if _, ok := only[o.mode]; !ok {
		return fmt.Errorf("-mode %q: want one-run or multi-run", o.mode)
	}
	for mode, names := range only {
		for _, name := range names {
			if set[name] && mode != o.mode {
				return fmt.Errorf("-%s applies to -mode %s only", name, mode)
			}
		}
	}
	if o.mode == "multi-run" {
		// The multi-run audit has its own defaults (audit.MultiConfig): take only the flags given.
		if !set["epsilon"] {
			c.Epsilon = 1.5
		}
		if !set["epochs"] {
			c.Epochs = 50
		}
		if !set["batch"] {
			c.BatchSize = 2
		}
		if o.multi.Runs < 2 {
			return fmt.Errorf("-runs %d: want at least 2 runs", o.multi.Runs)
		}
		if o.multi.Filler < 1 {
			return fmt.Errorf("-filler %d: want at least 1 example", o.multi.Filler)
		}
		if o.multi.Dim < 1 {
			return fmt.Errorf("-dim %d: want at least 1 input", o.multi.Dim)
		}
		c.Canaries = o.multi.Runs // the bound for -guesses
	}
	if set["noise"] && set["epsilon"] {
		return errors.New("-noise and -epsilon: give one (the noise is calibrated for -epsilon, or -noise fixes it)")
	}
	if set["noise"] {
		c.Epsilon = 0
		if !(c.NoiseMultiplier > 0) {
			return fmt.Errorf("-noise %v: want a noise multiplier > 0", c.NoiseMultiplier)
		}
	} else if !(c.Epsilon > 0) {
		return fmt.Errorf("-epsilon %v: want ε > 0", c.Epsilon)
	}
	if c.Canaries > audit.MaxCanaries {
		return fmt.Errorf("-canaries %d: at most %d (each canary is an input coordinate of its own, so memory and time grow with m·(n + m))", c.Canaries, audit.MaxCanaries)
	}
	positive := []struct {
		name string
		ok   bool
	}{
		{"canaries", c.Canaries >= 2},
		{"real", c.RealExamples >= 1},
		{"batch", c.BatchSize >= 0},
		{"epochs", c.Epochs >= 1},
		{"delta", c.Delta > 0 && c.Delta < 1},
		{"clip", c.Clip > 0},
		{"lr", c.LearningRate >= 0},
		{"confidence", c.Confidence > 0 && c.Confidence < 1},
		{"resume-after", c.ResumeAfter >= 0},
	}
	for _, p := range positive {
		if !p.ok {
			return fmt.Errorf("-%s: value out of range (see audit -help)", p.name)
		}
	}
	switch o.score {
	case "step-likelihood":
		c.Score = audit.StepLikelihood
	case "accumulated-update":
		c.Score = audit.AccumulatedUpdate
	default:
		return fmt.Errorf("-score %q: want step-likelihood or accumulated-update", o.score)
	}
	if o.seed < -1 {
		return fmt.Errorf("-seed %d: want a seed ≥ 0", o.seed)
	}
	if o.seed >= 0 {
		s := uint64(o.seed)
		c.Seed = &s
	}
	if o.guesses != "" {
		for _, f := range strings.Split(o.guesses, ",") {
			r, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || r < 2 || r%2 != 0 || r > c.Canaries {
				return fmt.Errorf("-guesses: %q is not an even count in [2, %d]", f, c.Canaries)
			}
			c.Guesses = append(c.Guesses, r)
		}
	}
	if o.mode == "multi-run" {
		if c.BatchSize < 1 {
			return errors.New("-batch: want b ≥ 1 in multi-run mode")
		}
		o.multi.Common = c.Common // the flags both modes share
	}
	return nil
}

func report(w io.Writer, r audit.Result) {
	fmt.Fprintf(w, "empirical ε     ≥ %.3f at %g%% confidence, δ = %g (Steinke, Nasr & Jagielski 2023, Theorem 1)\n", r.EmpiricalEpsilonLowerBound, 100*r.Confidence, r.Delta)
	fmt.Fprintf(w, "accountant ε    %.4f at δ = %g (RDP ledger of the run)\n", r.Epsilon, r.Delta)
	if r.Flagged {
		fmt.Fprintf(w, "verdict         FLAGGED: the lower bound exceeds the accountant's ε; the mechanism does not deliver its guarantee\n")
	} else {
		fmt.Fprintf(w, "verdict         consistent: the lower bound is below the accountant's ε (%.0f%% of it)\n", 100*r.EmpiricalEpsilonLowerBound/r.Epsilon)
	}
	tried := make([]string, len(r.GuessCounts))
	for i, g := range r.GuessCounts {
		tried[i] = strconv.Itoa(g)
	}
	if r.Mode == "multi-run" {
		fmt.Fprintf(w, "runs            %d, one canary each (%d included by the coins), scored by %s\n", r.Runs, r.Included, r.Score)
	} else {
		fmt.Fprintf(w, "canaries        %d (%d included by the coins), scored by %s\n", r.Canaries, r.Included, r.Score)
	}
	fmt.Fprintf(w, "guesses         %d correct of %d (%d \"in\", %d \"out\"; best of r = %s, each half-and-half or all \"in\", confidence split over them)\n", r.Correct, r.Guesses, r.GuessesIn, r.Guesses-r.GuessesIn, strings.Join(tried, ", "))
	what := "real + included canaries"
	if r.Mode == "multi-run" {
		what = "filler + the canary; q and n of a run with it"
	}
	fmt.Fprintf(w, "mechanism       DP-SGD, noise multiplier z = %.4g, clip C = %g, q = %.4g, %d steps, n = %d (%s), lr %.3g\n", r.NoiseMultiplier, r.Clip, r.SampleRate, r.Steps, r.DatasetSize, what, r.LearningRate)
	fmt.Fprintf(w, "noise source    %s\n", r.Noise)
	fmt.Fprintf(w, "time            %.1fs\n", r.Seconds)
}
