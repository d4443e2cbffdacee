package traincmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// optimizerSpec is everything cmd/train knows about one -optimizer: the flags, their
// defaults and validation, the -help text, the settings a checkpoint records and the
// report are all derived from the table optimizers. To add an optimizer, add one entry.
type optimizerSpec struct {
	name string
	// private: DP training (clipping, noise, an accountant, the privacy flags); false:
	// plain training, with the smaller non-private defaults of -batch and -epochs.
	private bool
	lr      float64 // -lr when not given
	// takes maps each optimizer flag (optimizerFlags) that the optimizer takes to its
	// default; a flag not in it is an error for this optimizer. A flag it takes is
	// recorded in the run's settings. "ls-sigma" also turns on Laplacian smoothing of
	// the noisy gradient (DP-LSSGD, DP-LSAdam). A word-valued flag (optimizerFlag.text)
	// maps to 0 here; its default is the flag's textDefault.
	takes map[string]float64
	// stepSize, when set, describes the optimizer's own step-size rule for learning
	// rate lr ("step size 16/√(20+t)"); -lr-schedule must then stay constant.
	stepSize func(o *options) string
	help     string // one line for -help
	// build makes the update rule from the parsed flags and the -lr-schedule.
	build func(o *options, lr dpoptim.Schedule) dpoptim.Rule
}

// optimizers is the table of -optimizer values, in the order -help lists them.
var optimizers = []optimizerSpec{
	{name: "sgd", lr: 0.2, takes: map[string]float64{"momentum": 0},
		help:  "SGD (heavy-ball -momentum), not private",
		build: buildSGD},
	{name: "adam", lr: 3e-3,
		help:  "Adam, not private",
		build: buildAdam},
	{name: "dp-sgd", private: true, lr: 3, takes: map[string]float64{"momentum": 0},
		help:  "DP-SGD (Abadi et al. 2016; heavy-ball -momentum)",
		build: buildSGD},
	{name: "dp-adam", private: true, lr: 1e-2,
		help:  "DP-Adam",
		build: buildAdam},
	{name: "dp-lssgd", private: true, lr: 4, takes: map[string]float64{"momentum": 0, "ls-sigma": defaultLSSigma, "ls-axis": 0},
		help:  "DP-SGD with Laplacian smoothing of the noisy gradient (DP-LSSGD, -ls-sigma)",
		build: buildSGD},
	{name: "dp-lsadam", private: true, lr: 1e-2, takes: map[string]float64{"ls-sigma": defaultLSSigma, "ls-axis": 0},
		help:  "DP-Adam with Laplacian smoothing (DP-LSAdam, -ls-sigma)",
		build: buildAdam},
	{name: "adp-sgd", private: true, lr: 16,
		takes:    map[string]float64{"adp-schedule": 0, "adp-noise": 0, "adp-beta": defaultADPBeta, "adp-c": defaultADPC},
		help:     "ADP-SGD (Wu et al.): its own step size (-adp-schedule; default lr/√(20+t)) with noise matched to it (-lr-schedule stays constant)",
		stepSize: adpStepSize,
		build:    buildADP},
	{name: "dp-hb", private: true, lr: 0.4, takes: map[string]float64{"momentum": defaultHeavyMomentum},
		help: "DP heavy ball, -momentum β",
		build: func(o *options, lr dpoptim.Schedule) dpoptim.Rule {
			return &dpoptim.HeavyBall{LearningRate: lr, Momentum: o.momentum}
		}},
	{name: "dp-nag", private: true, lr: 0.4, takes: map[string]float64{"momentum": defaultHeavyMomentum},
		help: "DP Nesterov accelerated gradient, -momentum β",
		build: func(o *options, lr dpoptim.Schedule) dpoptim.Rule {
			return &dpoptim.Nesterov{LearningRate: lr, Momentum: o.momentum}
		}},
}

func buildSGD(o *options, lr dpoptim.Schedule) dpoptim.Rule {
	r := dpoptim.NewSGD(lr)
	r.Momentum = o.momentum
	return r
}

func buildAdam(_ *options, lr dpoptim.Schedule) dpoptim.Rule { return dpoptim.NewAdam(lr) }

// optimizerFlag is a flag that only some optimizers take (optimizerSpec.takes).
type optimizerFlag struct {
	name  string
	usage string                    // -help text; the optimizers that take it and their defaults are appended
	value func(o *options) *float64 // the option the flag sets
	check func(v float64) error     // a value's validation
	// text, for a flag whose value is a word, is the option it sets instead of value;
	// textDefault is its default for every optimizer that takes it, checkText its
	// validation.
	text        func(o *options) *string
	textDefault string
	checkText   func(s string) error
}

// optimizerFlags are the flags that depend on the optimizer.
var optimizerFlags = []optimizerFlag{
	{name: "momentum", usage: "momentum in [0, 1)",
		value: func(o *options) *float64 { return &o.momentum },
		check: func(v float64) error {
			if !(v >= 0 && v < 1) {
				return exit.Usagef("-momentum %v: want a value in [0, 1)", v)
			}
			return nil
		}},
	{name: "ls-sigma", usage: "Laplacian smoothing σ",
		value: func(o *options) *float64 { return &o.lsSigma },
		check: func(v float64) error {
			if !(v >= 0) || math.IsInf(v, 0) {
				return exit.Usagef("-ls-sigma %v: want a finite σ ≥ 0", v)
			}
			return nil
		}},
	{name: "ls-axis", usage: "which neighbours Laplacian smoothing averages: input (dense weights along their inputs, output unit after output unit, as the DP-LSSGD authors' PyTorch code; conv weights, biases in storage order) | flat (every tensor in storage order, a dense weight [in, out] across the outputs of one input; runs before -ls-axis) (default input)",
		text: func(o *options) *string { return &o.lsAxis }, textDefault: "input",
		checkText: func(s string) error { return oneOf("ls-axis", s, []string{"input", "flat"}) }},
	{name: "adp-schedule", usage: "ADP-SGD's step size η_t, the noise matched to it (α_t² = b_t, Wu et al.): poly (lr/√(20+t), the paper's Tables 2 and 5) | sqrt-decay (lr·(0.1 − α_T√t), α_T = (0.1 − 1e-10)/√T over the run's T steps, the paper's Tables 1 and 4; a resumed run keeps T) | adagrad-norm (lr/b_{t+1}, b_{t+1}² = b_t² + max(β_t·‖g̃_t‖², 1e-5) from the noisy gradient g̃_t, b_0² = 20, β_t = max(-adp-beta/((t mod E)+1), 1) with E the steps of an epoch, noise α_t² = √(20 + t·(-adp-c)); Table 3) (default poly)",
		text: func(o *options) *string { return &o.adp.schedule }, textDefault: "poly",
		checkText: func(s string) error { return oneOf("adp-schedule", s, adpSchedules) }},
	{name: "adp-noise", usage: "ADP-SGD's noise: matched (the noise multiplier follows the step size, ADP-SGD) | constant (the same step sizes with constant noise: DP-SGD, the paper's baseline) (default matched)",
		text: func(o *options) *string { return &o.adp.noise }, textDefault: "matched",
		checkText: func(s string) error { return oneOf("adp-noise", s, []string{"matched", "constant"}) }},
	{name: "adp-beta", usage: "β of -adp-schedule adagrad-norm (the boost of ‖g̃_t‖² at the start of each epoch), > 0",
		value: func(o *options) *float64 { return &o.adp.beta },
		check: func(v float64) error {
			if !(v > 0) || math.IsInf(v, 0) {
				return exit.Usagef("-adp-beta %v: want a finite β > 0", v)
			}
			return nil
		}},
	{name: "adp-c", usage: "C of -adp-schedule adagrad-norm's noise α_t² = √(20 + t·C) (the paper takes C in [ν, G²] = [1e-5, clip²]), > 0",
		value: func(o *options) *float64 { return &o.adp.c },
		check: func(v float64) error {
			if !(v > 0) || math.IsInf(v, 0) {
				return exit.Usagef("-adp-c %v: want a finite C > 0", v)
			}
			return nil
		}},
}

// privacyFlags are the flags of private training: an error with a non-private optimizer.
var privacyFlags = []string{"epsilon", "noise", "clip", "clipping", "delta", "accountant", "clip-quantile", "clip-lr", "clip-count-noise"}

// optimizerNames are the names of the table, in its order.
var optimizerNames = func() []string {
	names := make([]string, len(optimizers))
	for i, s := range optimizers {
		names[i] = s.name
	}
	return names
}()

// lookupOptimizer returns the table's entry for name (nil: unknown).
func lookupOptimizer(name string) *optimizerSpec {
	for i := range optimizers {
		if optimizers[i].name == name {
			return &optimizers[i]
		}
	}
	return nil
}

// private says whether optimizer is private (an unknown name is: validate rejects it).
func private(optimizer string) bool {
	s := lookupOptimizer(optimizer)
	return s == nil || s.private
}

// takesFlag says whether the optimizer takes the optimizer flag name.
func (s *optimizerSpec) takesFlag(name string) bool {
	_, ok := s.takes[name]
	return ok
}

// takers lists the optimizers that take the optimizer flag name ("a, b and c"), and
// with their defaults when withDefaults ("a, b (default 0), c (default 0.9)").
func takers(name string, withDefaults bool) string {
	var parts []string
	for i, s := range optimizers {
		def, ok := s.takes[name]
		if !ok {
			continue
		}
		part := s.name
		if withDefaults {
			// one "(default v)" for each run of optimizers with the same default
			last := true
			for _, t := range optimizers[i+1:] {
				if d, ok := t.takes[name]; ok {
					last = d != def
					break
				}
			}
			if last {
				part += fmt.Sprintf(" (default %g)", def)
			}
		}
		parts = append(parts, part)
	}
	if withDefaults || len(parts) < 2 {
		return strings.Join(parts, ", ")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// optimizerUsage is the -help text of -optimizer: one line per optimizer.
func optimizerUsage() string {
	var b strings.Builder
	b.WriteString("optimizer: " + strings.Join(optimizerNames, " | "))
	for _, s := range optimizers {
		fmt.Fprintf(&b, "\n  %-10s %s", s.name, s.help)
	}
	return b.String()
}

// lrDefaults lists the default learning rate of each optimizer for -help.
func lrDefaults() string {
	var parts []string
	for _, s := range optimizers {
		parts = append(parts, fmt.Sprintf("%s %g", s.name, s.lr))
	}
	return strings.Join(parts, ", ")
}

// resolveOptimizer fills -lr and the optimizer flags that were neither given nor taken
// from a checkpoint with the optimizer's defaults.
func (o *options) resolveOptimizer() {
	spec := lookupOptimizer(o.optimizer)
	if spec == nil {
		return // validate reports it
	}
	if !o.given("lr") {
		o.lr = spec.lr
	}
	for _, f := range optimizerFlags {
		if def, ok := spec.takes[f.name]; ok && !o.given(f.name) {
			if f.text != nil {
				*f.text(o) = f.textDefault
			} else {
				*f.value(o) = def
			}
		}
	}
}

// validateOptimizer checks the flags that depend on the optimizer: each optimizer flag
// given must be one it takes and a valid value, -lr-schedule must stay constant for an
// optimizer with its own step size, and the privacy flags need a private optimizer.
func (o *options) validateOptimizer() error {
	spec := lookupOptimizer(o.optimizer)
	for _, f := range optimizerFlags {
		if o.set[f.name] && !spec.takesFlag(f.name) {
			return exit.Usagef("-%s applies to %s, not %s", f.name, takers(f.name, false), o.optimizer)
		}
		if !spec.takesFlag(f.name) {
			continue
		}
		if f.text != nil {
			if err := f.checkText(*f.text(o)); err != nil {
				return err
			}
		} else if err := f.check(*f.value(o)); err != nil {
			return err
		}
	}
	if err := o.validateADP(spec); err != nil {
		return err
	}
	if spec.stepSize != nil && o.lrSchedule != "constant" {
		return exit.Usagef("-lr-schedule %s: %s has its own %s; leave -lr-schedule at constant", o.lrSchedule, o.optimizer, spec.stepSize(o))
	}
	if !spec.private {
		for _, f := range privacyFlags {
			if o.set[f] {
				return exit.Usagef("-%s: optimizer %s is not private (no clipping, no noise, ε = ∞); use dp-%s for private training", f, o.optimizer, o.optimizer)
			}
		}
	}
	return nil
}

// optimizerSettings records the optimizer flags the optimizer takes.
func (o *options) optimizerSettings(s map[string]string) {
	spec := lookupOptimizer(o.optimizer)
	for _, f := range optimizerFlags {
		switch {
		case !spec.takesFlag(f.name) || f.name == "ls-axis" && o.lsAxisUnrecorded || isADPFlag(f.name) && o.adp.unrecorded:
		case f.text != nil:
			s[f.name] = *f.text(o)
		default:
			s[f.name] = strconv.FormatFloat(*f.value(o), 'g', -1, 64)
		}
	}
	o.adpSettings(s)
}

// applyCheckpointLegacy adapts the options to a checkpoint written before some of the
// optimizer flags existed: -ls-axis (applyCheckpointLSAxis) and the -adp-* flags
// (applyCheckpointADP).
func (o *options) applyCheckpointLegacy(c *checkpoint.Training) error {
	if err := o.applyCheckpointLSAxis(c.Settings); err != nil {
		return err
	}
	if _, ok := c.Settings[settingADPSteps]; ok && o.set["epochs"] && o.epochs != c.Plan.Epochs {
		return exit.Usagef("-epochs %d: the resumed run's -adp-schedule sqrt-decay decays to 1e-10 over its %d epochs (T = %s steps); a resumed run cannot change -epochs (start a new run instead)", o.epochs, c.Plan.Epochs, c.Settings[settingADPSteps])
	}
	return o.applyCheckpointADP(c.Settings)
}

// applyCheckpointLSAxis resumes a smoothed run whose checkpoint predates -ls-axis (its
// settings do not name one): it smoothed every tensor in storage order, so it continues
// with -ls-axis flat, and its settings keep leaving the flag out so that they still match
// the checkpoint's. Asking for another axis is refused.
func (o *options) applyCheckpointLSAxis(settings map[string]string) error {
	spec := lookupOptimizer(settings["optimizer"])
	if _, named := settings["ls-axis"]; spec == nil || !spec.takesFlag("ls-axis") || named {
		return nil
	}
	if o.set["ls-axis"] && o.lsAxis != "flat" {
		return exit.Usagef("-ls-axis %s: the checkpoint %s was written before -ls-axis and smoothed every tensor in storage order; resume it with -ls-axis flat (or without -ls-axis)", o.lsAxis, o.resume)
	}
	o.lsAxis, o.lsAxisUnrecorded = "flat", true
	if !o.set["ls-axis"] {
		o.fromCheckpoint = append(o.fromCheckpoint, "ls-axis")
	}
	return nil
}

// lrString describes the step size for the report and the plot: "lr 3 (constant),
// momentum 0.9" or the optimizer's own rule.
func lrString(o *options) string {
	spec := lookupOptimizer(o.optimizer)
	if spec.stepSize != nil {
		return spec.stepSize(o)
	}
	s := fmt.Sprintf("lr %g (%s%s)", o.lr, o.lrSchedule, warmupString(o))
	if spec.takesFlag("momentum") && o.momentum > 0 {
		s += fmt.Sprintf(", momentum %g", o.momentum)
	}
	return s
}

// The ADP-SGD optimizer's flags (-adp-schedule, -adp-noise, -adp-beta, -adp-c).
type adpOptions struct {
	schedule, noise string
	beta, c         float64
	// steps is the horizon of the sqrt-decay schedule taken from a resumed checkpoint
	// (0: the plan's steps).
	steps int
	// unrecorded: a resumed checkpoint from before the -adp-* flags (an ADP-SGD run
	// with the poly schedule and matched noise, the only one there was); its settings
	// keep leaving the flags out so that they still match the checkpoint's.
	unrecorded bool
}

// adpSchedules are the values of -adp-schedule.
var adpSchedules = []string{"poly", "sqrt-decay", "adagrad-norm"}

// The defaults of -adp-beta and -adp-c: the paper's β = 1 (no boost) and the C it
// selected most often (its Table 6).
const (
	defaultADPBeta = 1
	defaultADPC    = 1e-4
)

// The constants of the paper's experiments (Wu et al., §5 and appendix F): the orange
// schedule falls from 0.1 to 1e-10; AdaGrad-norm starts at b_0² = 20 with ν = 1e-5.
const (
	adpSqrtDecayStart = 0.1
	adpSqrtDecayEnd   = 1e-10
	adpAdaGradB0Sq    = 20
	adpAdaGradNu      = 1e-5
)

// settingADPSteps records the horizon T of -adp-schedule sqrt-decay (the plan's steps
// when the run started), so that a resumed run keeps the schedule it started with.
const settingADPSteps = "adp-steps"

func isADPFlag(name string) bool { return strings.HasPrefix(name, "adp-") }

// validateADP refuses -adp-beta and -adp-c with a schedule other than adagrad-norm.
func (o *options) validateADP(spec *optimizerSpec) error {
	if !spec.takesFlag("adp-schedule") || o.adp.schedule == "adagrad-norm" {
		return nil
	}
	for _, f := range []string{"adp-beta", "adp-c"} {
		if o.set[f] {
			return exit.Usagef("-%s applies to -adp-schedule adagrad-norm, not %s", f, o.adp.schedule)
		}
	}
	return nil
}

// adpSteps is the horizon T of the sqrt-decay schedule: the plan's steps, or for a
// resumed run the horizon it started with (its checkpoint's settings).
func (o *options) adpSteps() int {
	if o.adp.steps > 0 {
		return o.adp.steps
	}
	return o.planSteps
}

// buildADP makes the ADP-SGD rule of -adp-schedule and -adp-noise.
func buildADP(o *options, _ dpoptim.Schedule) dpoptim.Rule {
	constant := o.adp.noise == "constant"
	switch o.adp.schedule {
	case "sqrt-decay":
		return &dpoptim.ADPSqrtDecay{Eta: o.lr, Start: adpSqrtDecayStart, End: adpSqrtDecayEnd,
			Steps: max(o.adpSteps(), 1), ConstantNoise: constant}
	case "adagrad-norm":
		period := 0
		if o.planSteps > 0 && o.epochs > 0 {
			period = o.planSteps / o.epochs // one epoch, as the paper's 195
		}
		return &dpoptim.ADPAdaGradNorm{Eta: o.lr, B0: math.Sqrt(adpAdaGradB0Sq), Nu: adpAdaGradNu, C: o.adp.c,
			Beta: o.adp.beta, BoostPeriod: period, ConstantNoise: constant}
	default: // poly: the paper's experiments, η_t = lr/√(20 + t), i.e. b_{t+1}² = 19 + (t+1)
		return &dpoptim.ADPPolynomial{Eta: o.lr, A: 19, C: 1, ConstantNoise: constant}
	}
}

// adpStepSize describes ADP-SGD's step size and noise for the report.
func adpStepSize(o *options) string {
	var s string
	switch o.adp.schedule {
	case "sqrt-decay":
		s = fmt.Sprintf("step size %g·(0.1 − α_T√t), α_T = (0.1 − 1e-10)/√T, T = %d", o.lr, o.adpSteps())
	case "adagrad-norm":
		s = fmt.Sprintf("step size %g/b_{t+1}, AdaGrad-norm on the noisy gradient (b₀² = 20, ν = 1e-5, β = %g)", o.lr, o.adp.beta)
	default:
		s = fmt.Sprintf("step size %g/√(20+t)", o.lr)
	}
	switch {
	case o.adp.noise == "constant":
		s += ", constant noise (DP-SGD)"
	case o.adp.schedule == "adagrad-norm":
		s += fmt.Sprintf(", noise matched (α_t² = √(20 + %g·t))", o.adp.c)
	case o.adp.schedule != "" && o.adp.schedule != "poly":
		s += ", noise matched (α_t² = b_t)"
	}
	return s
}

// adpSettings records the horizon of the sqrt-decay schedule once the plan is known.
func (o *options) adpSettings(s map[string]string) {
	if o.optimizer == "adp-sgd" && o.adp.schedule == "sqrt-decay" && o.adpSteps() > 0 {
		s[settingADPSteps] = strconv.Itoa(o.adpSteps())
	}
}

// applyCheckpointADP resumes an ADP-SGD run: the sqrt-decay schedule keeps the horizon
// it started with; a checkpoint from before the -adp-* flags ran poly with matched noise,
// and asking for anything else is refused.
func (o *options) applyCheckpointADP(settings map[string]string) error {
	if settings["optimizer"] != "adp-sgd" {
		return nil
	}
	if v, ok := settings[settingADPSteps]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return exit.Usagef("-resume %s: the checkpoint's %s = %q is not a step count", o.resume, settingADPSteps, v)
		}
		o.adp.steps = n
	}
	if _, named := settings["adp-schedule"]; named {
		return nil
	}
	for _, f := range optimizerFlags {
		if !isADPFlag(f.name) || !o.set[f.name] {
			continue
		}
		if f.text != nil && *f.text(o) == f.textDefault {
			continue
		}
		return exit.Usagef("-%s: the checkpoint %s was written before the -adp-* flags and ran -adp-schedule poly with matched noise; resume it without -%s", f.name, o.resume, f.name)
	}
	o.adp.unrecorded = true
	return nil
}
