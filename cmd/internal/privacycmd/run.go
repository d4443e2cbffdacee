package privacycmd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

const topUsage = `usage: privacy <command> [flags]

Commands:
  epsilon   the (ε, δ) spent by a training plan with a given noise multiplier, or by
            the run of a checkpoint (-checkpoint FILE: its privacy ledger)
  noise     the smallest noise multiplier that meets a target ε
  budget    what each data set has spent over all recorded runs (the budget store)

epsilon and noise answer by the RDP and the PLD accountant side by side unless
-accountant rdp or -accountant pld picks one.

The training plan is Poisson-sampled DP-SGD: each step includes every example
with probability q and adds Gaussian noise of standard deviation z·C to the
sum of clipped gradients (z: noise multiplier, C: clipping norm). Give it as
-n, -batch, -epochs (q = batch/n, steps = epochs·⌈n/batch⌉, as cmd/train runs
them) or as -q, -steps.

Run "privacy <command> -help" for the flags of a command.
`

// run executes the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return exit.Usage
	}
	switch args[0] {
	case "epsilon", "noise":
		return runCommand(args[0], args[1:], stdout, stderr)
	case "budget":
		return runBudget(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, topUsage)
		return exit.OK
	}
	fmt.Fprintf(stderr, "privacy: unknown command %q (want epsilon, noise or budget; see privacy -help)\n", args[0])
	return exit.Usage
}

// options are the parsed flags of both commands.
type options struct {
	n, batch, steps int
	epochs, q       float64
	noise, epsilon  float64
	delta           float64
	conversion      string
	maxOrder        int
	orders          string
	accountant      string
	json            bool
	set             map[string]bool // flags given on the command line
	// checkpoint is epsilon's -checkpoint FILE, loaded under signing's rules.
	checkpoint string
	signing    *cli.Signing
}

func newFlagSet(cmd string, o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("privacy "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line by runCommand
	fs.IntVar(&o.n, "n", 0, "training-set size (with -batch)")
	fs.IntVar(&o.batch, "batch", 0, "expected batch size; the sampling rate is q = batch/n")
	fs.Float64Var(&o.epochs, "epochs", 0, "number of passes over the data; steps = epochs·⌈n/batch⌉ (with -q: epochs·⌈1/q⌉), as cmd/train counts them")
	fs.Float64Var(&o.q, "q", 0, "sampling rate in (0, 1] (instead of -n and -batch)")
	fs.IntVar(&o.steps, "steps", 0, "number of steps (instead of -epochs)")
	if cmd == "epsilon" {
		fs.Float64Var(&o.noise, "noise", 0, "noise multiplier z > 0: noise standard deviation over clipping norm (required, unless -checkpoint)")
		fs.StringVar(&o.checkpoint, "checkpoint", "", "a checkpoint `FILE` written by train -checkpoint: the ε its run spent (Opacus's get_epsilon for a saved run), from its privacy ledger (every step of its lineage), at the plan's δ unless -delta is given, with the run's plan, steps and lineage; replaces -n, -batch, -epochs, -q, -steps and -noise")
		o.signing = cli.SigningFlag(fs, "privacy", nil)
	} else {
		fs.Float64Var(&o.epsilon, "epsilon", 0, "target ε > 0 (required)")
	}
	fs.Float64Var(&o.delta, "delta", 1e-5, "δ in (0, 1); keep it well below 1/n")
	fs.StringVar(&o.conversion, "conversion", "balle", "RDP to (ε, δ) conversion: balle (Balle et al. 2020, tighter) or classic (Mironov 2017, TF Privacy before 2020)")
	fs.IntVar(&o.maxOrder, "max-order", 63, "largest Rényi order: the orders are 1.1, 1.2, …, 10.9, 12, 13, …, max-order; raise it (e.g. 1024) for small ε")
	fs.StringVar(&o.orders, "orders", "", "comma-separated Rényi orders > 1, replacing the default list (excludes -max-order)")
	fs.StringVar(&o.accountant, "accountant", "both", "rdp (Rényi DP, Balle et al. conversion), pld (privacy loss distribution, pessimistic discretisation: tighter), or both side by side (with -json: the RDP object with the PLD result under \"pld\")")
	fs.BoolVar(&o.json, "json", false, "print one JSON object instead of text")
	return fs
}

// commandUsage is the -help text of each command before its flags.
var commandUsage = map[string]string{
	"epsilon": `usage: privacy epsilon -n N -batch B -epochs E -noise Z [flags]
       privacy epsilon -q Q -steps T -noise Z [flags]
       privacy epsilon -checkpoint FILE [flags]

Prints the ε for which the plan is (ε, δ)-DP by the RDP accountant (with the
Rényi order that gives it) and by the PLD accountant, side by side, and the
sampling rate and number of steps assumed. -accountant rdp or pld prints one.
Both are upper bounds; the PLD one is tighter (typically 5–10 % lower ε).
With -checkpoint, the ε that a saved run spent: every step its privacy ledger
records (resumes and rewinds included), at the plan's δ, with the run's plan,
steps and lineage; the RDP accountant uses the run's own orders and conversion.

Example (TF Privacy's MNIST tutorial; the README's 3.01 is -conversion classic
with -steps 14040, i.e. 234 steps per epoch):
  privacy epsilon -n 60000 -batch 256 -epochs 60 -noise 1.1 -delta 1e-5
  privacy epsilon -accountant pld -q 0.0042667 -steps 14063 -noise 1.1 -delta 1e-5 -json
  privacy epsilon -checkpoint m.ckpt

Flags:
`,
	"noise": `usage: privacy noise -n N -batch B -epochs E -epsilon EPS [flags]
       privacy noise -q Q -steps T -epsilon EPS [flags]

Prints the smallest noise multiplier (to a relative 1e-4) for which the plan
is (EPS, δ)-DP, and the ε it achieves, by the RDP and the PLD accountant (or
the one -accountant names). A small EPS may need -max-order 1024 (RDP).

Example:
  privacy noise -n 60000 -batch 256 -epochs 60 -epsilon 3 -delta 1e-5

Flags:
`,
}

func runCommand(cmd string, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := newFlagSet(cmd, &o)
	hint := " (see privacy " + cmd + " -help)"
	c := cli.Command{Name: "privacy " + cmd, Flags: fs, Header: commandUsage[cmd], ParseHint: hint, Verbatim: true, ArgsHint: hint}
	if code, ok := c.Parse(args, stdout, stderr); !ok {
		return code
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.set["checkpoint"] {
		o.signing.Stderr = stderr
		if err := checkpointEpsilon(o, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "privacy %s: %s\n", cmd, exit.OneLine(strings.TrimPrefix(err.Error(), "accountant: ")))
			return exit.Status(err)
		}
		return exit.OK
	}

	p, err := o.plan(cmd)
	if err != nil {
		fmt.Fprintf(stderr, "privacy %s: %v\n", cmd, err)
		return exit.Usage
	}
	r, err := p.run(cmd, o)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "accountant: ")
		if errors.Is(err, accountant.ErrUnreachable) {
			// The accountant's hint is a Go call; on the command line the flag is the fix,
			// and an unreachable target is bad input (exit 2), not a failure.
			msg, _, _ = strings.Cut(msg, "; extend the orders")
			fmt.Fprintf(stderr, "privacy %s: %s; raise -max-order (e.g. -max-order 1024) or give larger -orders\n", cmd, msg)
			return exit.Usage
		}
		fmt.Fprintf(stderr, "privacy %s: %s\n", cmd, msg)
		return exit.Failure
	}
	if r.Accountant == "rdp" && r.AtEdge {
		if r.Order == p.orders[len(p.orders)-1] {
			fmt.Fprintf(stderr, "privacy: warning: the optimal Rényi order %v is the largest in the list; a larger -max-order may give a smaller ε\n", r.Order)
		} else {
			fmt.Fprintf(stderr, "privacy: warning: the optimal Rényi order %v is the smallest in the list; orders closer to 1 (-orders) may give a smaller ε\n", r.Order)
		}
	}
	if p.n > 0 && o.delta >= 1/float64(p.n) {
		fmt.Fprintf(stderr, "privacy: warning: δ = %g is not below 1/n = %.3g; a δ that large admits publishing a random example outright\n", o.delta, 1/float64(p.n))
	}
	if o.json {
		if err := encodeResult(stdout, r); err != nil {
			fmt.Fprintf(stderr, "privacy %s: %v\n", cmd, err)
			return exit.Failure
		}
		return exit.OK
	}
	if r.PLD != nil {
		r.writeBoth(stdout, p)
	} else {
		r.writeText(stdout, p)
	}
	return exit.OK
}

// encodeResult writes r as one JSON object and a newline.
func encodeResult(w io.Writer, r result) error { return json.NewEncoder(w).Encode(r) }

// run computes the command's result with the accountants the flags select:
// for both, the RDP result carries the PLD one in its PLD field.
func (p *plan) run(cmd string, o options) (result, error) {
	compute := func(a string) (result, error) {
		if cmd == "epsilon" {
			return p.epsilon(a, o.noise)
		}
		return p.noise(a, o.epsilon)
	}
	if p.acct != "both" {
		return compute(p.acct)
	}
	r, err := compute("rdp")
	if err != nil {
		return result{}, err
	}
	pld, err := compute("pld")
	if err != nil {
		return result{}, err
	}
	r.PLD = &pld
	return r, nil
}

// plan is a validated training plan with its accountant options.
type plan struct {
	q          float64
	steps      int
	n, batch   int
	epochs     float64
	delta      float64
	orders     []float64
	conversion accountant.Conversion
	acct       string // rdp, pld or both
}

// maxOrderFlag caps -max-order: every integer order up to N costs about N²/2
// terms per RDP evaluation, a few seconds for a calibration at 4096.
const maxOrderFlag = 4096

// maxOrdersList caps the length of -orders for the same reason.
const maxOrdersList = 10000

func (o *options) plan(cmd string) (*plan, error) {
	p := &plan{n: o.n, batch: o.batch, epochs: o.epochs, delta: o.delta}
	// Sampling rate: -q, or -batch/-n.
	switch {
	case o.set["q"] && o.set["batch"]:
		return nil, exit.Usagef("-q and -batch both given; give the sampling rate one way")
	case o.set["q"]:
		if !(o.q > 0 && o.q <= 1) {
			return nil, exit.Usagef("-q: sampling rate must be in (0, 1], got %v", o.q)
		}
		p.q = o.q
		if o.set["n"] && o.n < 1 {
			return nil, exit.Usagef("-n: must be ≥ 1, got %d", o.n)
		}
	case o.set["batch"] || o.set["n"]:
		if !o.set["n"] {
			return nil, exit.Usagef("-batch needs -n (the training-set size)")
		}
		if !o.set["batch"] {
			return nil, exit.Usagef("-n needs -batch (or give -q)")
		}
		if o.n < 1 {
			return nil, exit.Usagef("-n: must be ≥ 1, got %d", o.n)
		}
		if o.batch < 1 || o.batch > o.n {
			return nil, exit.Usagef("-batch: must be in [1, n = %d], got %d", o.n, o.batch)
		}
		p.q = float64(o.batch) / float64(o.n)
	default:
		return nil, exit.Usagef("no sampling rate: give -n and -batch, or -q")
	}
	// Steps: -steps, or those of -epochs epochs.
	switch {
	case o.set["steps"] && o.set["epochs"]:
		return nil, exit.Usagef("-steps and -epochs both given; give the length one way")
	case o.set["steps"]:
		if o.steps < 1 {
			return nil, exit.Usagef("-steps: must be ≥ 1, got %d", o.steps)
		}
		p.steps = o.steps
	case o.set["epochs"]:
		if !(o.epochs > 0) || math.IsInf(o.epochs, 1) {
			return nil, exit.Usagef("-epochs: must be a finite number > 0, got %v", o.epochs)
		}
		// The trainer's count (accountant.PlanSteps): an epoch is ⌈n/b⌉ steps, so E
		// epochs are E·⌈n/b⌉ (a fractional E: ⌈E·⌈n/b⌉⌉). With -q alone an epoch is
		// ⌈1/q⌉ steps; the small slack keeps exact quotients from rounding up.
		var s float64
		if o.epochs == math.Trunc(o.epochs) && !o.set["q"] && o.epochs <= math.MaxInt32 {
			n, err := accountant.PlanSteps(o.n, o.batch, int(o.epochs))
			if err != nil {
				return nil, exit.Usagef("-epochs: %v", err)
			}
			s = float64(n)
		} else {
			spe := float64(accountant.StepsPerEpoch(o.n, o.batch))
			if o.set["q"] {
				spe = math.Ceil(1/p.q*(1-1e-12) - 1e-9)
			}
			s = math.Ceil(o.epochs*spe*(1-1e-15) - 1e-9)
		}
		if s > float64(math.MaxInt32) {
			return nil, exit.Usagef("-epochs: %v epochs at q = %v is %.3g steps, too many", o.epochs, p.q, s)
		}
		p.steps = max(int(s), 1)
	default:
		return nil, exit.Usagef("no length: give -epochs or -steps")
	}
	if cmd == "epsilon" {
		if !o.set["noise"] {
			return nil, exit.Usagef("-noise is required (the noise multiplier z)")
		}
		if !(o.noise > 0) || math.IsInf(o.noise, 1) {
			return nil, exit.Usagef("-noise: must be a finite number > 0, got %v", o.noise)
		}
	} else {
		if !o.set["epsilon"] {
			return nil, exit.Usagef("-epsilon is required (the target ε)")
		}
		if !(o.epsilon > 0) || math.IsInf(o.epsilon, 1) {
			return nil, exit.Usagef("-epsilon: must be a finite number > 0, got %v", o.epsilon)
		}
	}
	if !(o.delta > 0 && o.delta < 1) {
		return nil, exit.Usagef("-delta: must be in (0, 1), got %v", o.delta)
	}
	switch o.accountant {
	case "rdp", "pld", "both":
		p.acct = o.accountant
	default:
		return nil, exit.Usagef("-accountant: want rdp, pld or both, got %q", o.accountant)
	}
	conv, err := accountant.ParseConversion(o.conversion)
	if err != nil {
		return nil, exit.Usagef("-conversion: want balle or classic, got %q", o.conversion)
	}
	p.conversion = conv
	if o.set["orders"] {
		if o.set["max-order"] {
			return nil, exit.Usagef("-orders and -max-order both given; give the orders one way")
		}
		fields := strings.Split(o.orders, ",")
		if len(fields) > maxOrdersList {
			return nil, exit.Usagef("-orders: %d orders, at most %d", len(fields), maxOrdersList)
		}
		for _, f := range fields {
			a, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(a > 1 && a <= maxOrderFlag) {
				return nil, exit.Usagef("-orders: %q is not an order in (1, %d]", strings.TrimSpace(f), maxOrderFlag)
			}
			p.orders = append(p.orders, a)
		}
	} else {
		if o.maxOrder < 2 || o.maxOrder > maxOrderFlag {
			return nil, exit.Usagef("-max-order: must be in [2, %d], got %d", maxOrderFlag, o.maxOrder)
		}
		for _, a := range accountant.OrdersUpTo(o.maxOrder) {
			if a <= float64(o.maxOrder) {
				p.orders = append(p.orders, a)
			}
		}
	}
	return p, nil
}

func (p *plan) options() []accountant.Option {
	return []accountant.Option{accountant.WithOrders(p.orders), accountant.WithConversion(p.conversion)}
}

// result is what both commands print; the JSON field names are stable.
type result struct {
	Epsilon         float64  `json:"epsilon"`
	Delta           float64  `json:"delta"`
	Order           float64  `json:"order"`
	AtEdge          bool     `json:"order_at_edge"`
	SampleRate      float64  `json:"sample_rate"`
	Steps           int      `json:"steps"`
	NoiseMultiplier float64  `json:"noise_multiplier"`
	TargetEpsilon   *float64 `json:"target_epsilon,omitempty"`
	Conversion      string   `json:"conversion"`
	Orders          int      `json:"orders"`
	MaxOrder        float64  `json:"max_order"`
	// Accountant is "rdp" or "pld"; Description names its method and
	// discretisation. Order, Conversion, Orders and MaxOrder are RDP's (zero
	// for PLD), Discretisation the PLD grid width.
	Accountant     string  `json:"accountant"`
	Description    string  `json:"description"`
	Discretisation float64 `json:"discretisation,omitempty"`
	// PLD holds the PLD result beside the RDP one (-accountant both).
	PLD *result `json:"pld,omitempty"`
	// Checkpoint describes the run of epsilon -checkpoint FILE (absent for a plan).
	Checkpoint *checkpointInfo `json:"checkpoint,omitempty"`
}

func (p *plan) result(acct string, z float64, spent accountant.Spent) result {
	if acct == "pld" {
		a := accountant.PLD{}
		return result{
			Epsilon: spent.Epsilon, Delta: spent.Delta,
			SampleRate: p.q, Steps: p.steps, NoiseMultiplier: z,
			Accountant: "pld", Description: a.Description(), Discretisation: accountant.DefaultPLDDiscretisation,
		}
	}
	return result{
		Epsilon: spent.Epsilon, Delta: spent.Delta, Order: spent.Order, AtEdge: spent.AtEdge,
		SampleRate: p.q, Steps: p.steps, NoiseMultiplier: z,
		Conversion: p.conversion.String(), Orders: len(p.orders), MaxOrder: p.orders[len(p.orders)-1],
		Accountant: "rdp", Description: accountant.RDP{Orders: p.orders, Conversion: p.conversion}.Description(),
	}
}

// accountantOptions returns the options of acct ("rdp" or "pld").
func (p *plan) accountantOptions(acct string) []accountant.Option {
	if acct == "pld" {
		return []accountant.Option{accountant.WithAccountant(accountant.PLD{})}
	}
	return p.options()
}

func (p *plan) epsilon(acct string, z float64) (result, error) {
	ledger := accountant.NewLedger(p.accountantOptions(acct)...)
	if err := ledger.Record(p.q, z, p.steps); err != nil {
		return result{}, err
	}
	spent, err := ledger.Epsilon(p.delta)
	if err != nil {
		return result{}, err
	}
	return p.result(acct, z, spent), nil
}

func (p *plan) noise(acct string, target float64) (result, error) {
	z, _, err := accountant.CalibrateNoise(p.q, p.steps, target, p.delta, p.accountantOptions(acct)...)
	if err != nil {
		return result{}, err
	}
	// Report the ε, order and edge flag of the calibrated z from a ledger.
	r, err := p.epsilon(acct, z)
	r.TargetEpsilon = &target
	return r, err
}

func (r result) writeText(w io.Writer, p *plan) {
	if r.TargetEpsilon != nil {
		fmt.Fprintf(w, "noise_multiplier  %.6g\n", r.NoiseMultiplier)
		fmt.Fprintf(w, "epsilon           %.6g (target %g)\n", r.Epsilon, *r.TargetEpsilon)
	} else {
		fmt.Fprintf(w, "epsilon           %.6g\n", r.Epsilon)
	}
	fmt.Fprintf(w, "delta             %g\n", r.Delta)
	if r.Accountant == "pld" {
		fmt.Fprintf(w, "accountant        %s\n", r.Description)
	} else {
		fmt.Fprintf(w, "order             %g (of %d orders up to %g, %s conversion)\n", r.Order, r.Orders, r.MaxOrder, r.Conversion)
	}
	r.writePlan(w, p)
}

// writeBoth prints the RDP and PLD results side by side.
func (r result) writeBoth(w io.Writer, p *plan) {
	d := r.PLD
	fmt.Fprintf(w, "%-18s%-22s%s\n", "accountant", "rdp", "pld")
	if r.TargetEpsilon != nil {
		fmt.Fprintf(w, "%-18s%-22s%.6g\n", "noise_multiplier", fmt.Sprintf("%.6g", r.NoiseMultiplier), d.NoiseMultiplier)
		fmt.Fprintf(w, "%-18s%-22s%.6g (target %g)\n", "epsilon", fmt.Sprintf("%.6g", r.Epsilon), d.Epsilon, *r.TargetEpsilon)
	} else {
		fmt.Fprintf(w, "%-18s%-22s%.6g\n", "epsilon", fmt.Sprintf("%.6g", r.Epsilon), d.Epsilon)
	}
	fmt.Fprintf(w, "delta             %g\n", r.Delta)
	fmt.Fprintf(w, "order             %g (RDP: of %d orders up to %g, %s conversion)\n", r.Order, r.Orders, r.MaxOrder, r.Conversion)
	fmt.Fprintf(w, "discretisation    %s\n", d.Description)
	r.writePlan(w, p)
}

// writePlan prints the plan's lines shared by every output.
func (r result) writePlan(w io.Writer, p *plan) {
	if p.batch > 0 {
		fmt.Fprintf(w, "sample_rate       %.6g (batch %d / n %d)\n", r.SampleRate, p.batch, p.n)
	} else {
		fmt.Fprintf(w, "sample_rate       %.6g\n", r.SampleRate)
	}
	if p.epochs > 0 {
		fmt.Fprintf(w, "steps             %d (%g epochs)\n", r.Steps, p.epochs)
	} else {
		fmt.Fprintf(w, "steps             %d\n", r.Steps)
	}
	if r.TargetEpsilon == nil {
		fmt.Fprintf(w, "noise_multiplier  %g\n", r.NoiseMultiplier)
	}
}
