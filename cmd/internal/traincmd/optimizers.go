package traincmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
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
	stepSize func(lr float64) string
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
		help:     "ADP-SGD: step size lr/√(20+t) with noise matched to it (its own schedule; -lr-schedule stays constant)",
		stepSize: func(lr float64) string { return fmt.Sprintf("step size %g/√(20+t)", lr) },
		// The ADP-SGD paper's experiments: η_t = lr/√(20 + t), noise matched to it.
		build: func(o *options, _ dpoptim.Schedule) dpoptim.Rule {
			return &dpoptim.ADPPolynomial{Eta: o.lr, A: 19, C: 1}
		}},
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
	if spec.stepSize != nil && o.lrSchedule != "constant" {
		return exit.Usagef("-lr-schedule %s: %s has its own %s; leave -lr-schedule at constant", o.lrSchedule, o.optimizer, spec.stepSize(o.lr))
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
		case !spec.takesFlag(f.name) || f.name == "ls-axis" && o.lsAxisUnrecorded:
		case f.text != nil:
			s[f.name] = *f.text(o)
		default:
			s[f.name] = strconv.FormatFloat(*f.value(o), 'g', -1, 64)
		}
	}
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
		return spec.stepSize(o.lr)
	}
	s := fmt.Sprintf("lr %g (%s%s)", o.lr, o.lrSchedule, warmupString(o))
	if spec.takesFlag("momentum") && o.momentum > 0 {
		s += fmt.Sprintf(", momentum %g", o.momentum)
	}
	return s
}
