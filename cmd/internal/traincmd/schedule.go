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

// The learning-rate warm-up (-warmup-steps), the cosine schedule's horizon and parameter
// averaging (-ema): their validation, the schedule a run uses and the settings that a
// resumed run must match.

// settingDecaySteps records the steps a cosine schedule decays over (the plan's steps
// after the warm-up): a resumed run with another -epochs would change the rates of the
// steps already taken, so it must have the same.
const settingDecaySteps = "lr-decay-steps"

// validateScheduleAndAverage checks -warmup-steps and -ema (the plan's length is checked
// against the warm-up by scheduleFor, once the data is loaded).
func (o *options) validateScheduleAndAverage() error {
	if o.warmupSteps < 0 {
		return exit.Usagef("-warmup-steps %d: want ≥ 0", o.warmupSteps)
	}
	if spec := lookupOptimizer(o.optimizer); spec != nil && spec.stepSize != nil && o.warmupSteps > 0 {
		return exit.Usagef("-warmup-steps %d: %s has its own %s; leave -warmup-steps at 0", o.warmupSteps, o.optimizer, spec.stepSize(o))
	}
	if o.ema != 0 && !(o.ema > 0 && o.ema < 1) {
		return exit.Usagef("-ema %v: want a decay β in (0, 1), e.g. 0.999 (0: no averaging)", o.ema)
	}
	return nil
}

// scheduleFor returns the -lr-schedule with -warmup-steps for a plan of steps steps: a
// cosine decays over the steps after the warm-up (and o.decaySteps records them), and
// the warm-up hands over to the schedule (dpoptim.Warmup), whose step numbers then count
// from the warm-up's end. steps 0 (the plan not known yet) leaves a cosine's horizon
// unset: the schedule is for validation, a rule built from it refuses its first step.
func scheduleFor(o *options, steps int) (dpoptim.Schedule, error) {
	sched, err := parseSchedule(o.lrSchedule, o.lr)
	if err != nil {
		return nil, err
	}
	if steps > 0 {
		if o.warmupSteps > 0 && o.warmupSteps >= steps {
			return nil, exit.Usagef("-warmup-steps %d: the plan has only %d steps (-epochs %d); the warm-up must end before the last step", o.warmupSteps, steps, o.epochs)
		}
		o.decaySteps = 0
		if c, ok := sched.(dpoptim.Cosine); ok {
			c.Steps = steps - o.warmupSteps
			o.decaySteps = c.Steps
			sched = c
		}
	}
	if o.warmupSteps > 0 {
		sched = dpoptim.Warmup{Steps: o.warmupSteps, After: sched}
	}
	return sched, nil
}

// scheduleSettings records -warmup-steps, -ema and a cosine schedule's horizon when they
// are in use (a run without them records nothing new, so that checkpoints written before
// these flags resume).
func (o *options) scheduleSettings(s map[string]string) {
	if o.warmupSteps > 0 {
		s["warmup-steps"] = strconv.Itoa(o.warmupSteps)
	}
	if o.ema > 0 {
		s["ema"] = strconv.FormatFloat(o.ema, 'g', -1, 64)
	}
	if o.decaySteps > 0 {
		s[settingDecaySteps] = strconv.Itoa(o.decaySteps)
	}
}

// checkResumedHorizon refuses to resume a cosine schedule with another -epochs: the
// schedule's horizon is the plan's length, and changing it would change the rates of
// the steps already taken.
func (o *options) checkResumedHorizon(c *checkpoint.Training) error {
	if _, ok := c.Settings[settingDecaySteps]; ok && o.set["epochs"] && o.epochs != c.Plan.Epochs {
		return exit.Usagef("-epochs %d: the resumed run's cosine learning-rate schedule decays over its %d epochs; a resumed run cannot change -epochs (start a new run instead)", o.epochs, c.Plan.Epochs)
	}
	return nil
}

// warmupString describes the warm-up for the report ("" without one).
func warmupString(o *options) string {
	if o.warmupSteps == 0 {
		return ""
	}
	return ", linear warm-up over " + strconv.Itoa(o.warmupSteps) + " steps"
}

// rateSchedule is the learning rate of each step for the metrics: the optimizer's own
// step size (ADP-SGD) or the schedule scheduleFor built.
func rateSchedule(o *options, rule dpoptim.Rule, steps int) dpoptim.Schedule {
	if s, ok := rule.(dpoptim.Schedule); ok {
		return s
	}
	s, err := scheduleFor(o, steps)
	if err != nil {
		return nil // not reached: buildRule built the rule from the same schedule
	}
	return s
}

// parseSchedule turns -lr-schedule into a dpoptim schedule with initial rate lr.
func parseSchedule(s string, lr float64) (dpoptim.Schedule, error) {
	name, args, _ := strings.Cut(s, ":")
	bad := func(why string) error {
		return exit.Usagef("-lr-schedule %q: %s (want constant, step:AT:FACTOR, inverse-time, inverse-sqrt[:A:C] or cosine[:ALPHA])", s, why)
	}
	nums := func(want int) ([]float64, error) {
		parts := strings.Split(args, ":")
		if args == "" || len(parts) != want {
			return nil, bad(fmt.Sprintf("%s takes %d numbers", name, want))
		}
		v := make([]float64, want)
		for i, p := range parts {
			x, err := strconv.ParseFloat(p, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, bad(fmt.Sprintf("%q is not a number", p))
			}
			v[i] = x
		}
		return v, nil
	}
	switch name {
	case "constant":
		if args != "" {
			return nil, bad("constant takes no numbers")
		}
		return dpoptim.Constant(lr), nil
	case "step":
		v, err := nums(2)
		if err != nil {
			return nil, err
		}
		if v[0] < 0 || v[0] != math.Trunc(v[0]) || v[0] > math.MaxInt32 || !(v[1] >= 0) {
			return nil, bad("AT must be a step number ≥ 0 and FACTOR ≥ 0")
		}
		return dpoptim.StepDecay{Initial: lr, At: int(v[0]), Factor: v[1]}, nil
	case "inverse-time":
		if args != "" {
			return nil, bad("inverse-time takes no numbers")
		}
		return dpoptim.InverseTime{A: lr}, nil
	case "inverse-sqrt":
		if args == "" {
			return dpoptim.InverseSqrt{Eta: lr, A: 1, C: 1}, nil
		}
		v, err := nums(2)
		if err != nil {
			return nil, err
		}
		if !(v[0] > 0) || !(v[1] >= 0) {
			return nil, bad("A must be > 0 and C ≥ 0")
		}
		return dpoptim.InverseSqrt{Eta: lr, A: v[0], C: v[1]}, nil
	case "cosine":
		// Steps is the plan's, filled in by scheduleFor once the data is loaded.
		if args == "" {
			return dpoptim.Cosine{Initial: lr}, nil
		}
		v, err := nums(1)
		if err != nil {
			return nil, err
		}
		if !(v[0] >= 0 && v[0] <= 1) {
			return nil, bad("ALPHA must be in [0, 1]")
		}
		return dpoptim.Cosine{Initial: lr, Final: v[0] * lr}, nil
	}
	return nil, bad("unknown schedule")
}
