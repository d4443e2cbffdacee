package traincmd

import (
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// -average-iterates: DP-LSSGD's averaged output (training.TrainerConfig.Averaging.Iterate,
// dpoptim.IterateAverage), uniform (Theorem 3 as printed) or weighted by the step sizes
// (Theorem 2). Post-processing of the iterates, no privacy cost; not with -ema; its
// checkpoints hold the average and cannot be resumed.

// averageIteratesUsage is the flag's help text.
const averageIteratesUsage = "release the average of the iterates θ_0 … θ_{T−1} instead of the last one: `KIND` uniform (DP-LSSGD's Theorem 3, as printed; for a non-convex loss its proof bounds a uniformly random iterate, not this average) or step (weighted by each step's learning rate, Theorem 2, convex losses). The evaluations, the final accuracy and the -checkpoint's parameters are the average's; training goes on from the raw iterate. Post-processing, no privacy cost. Not with -ema; a checkpoint of such a run cannot be resumed (off: the last iterate)"

// validateAverageIterates checks -average-iterates against -ema and -resume.
func (o *options) validateAverageIterates() error {
	switch o.averageIterates {
	case "", "off":
		return nil
	case "uniform", "step":
	default:
		return exit.Usagef("-average-iterates %q: want uniform, step or off", o.averageIterates)
	}
	if o.ema != 0 {
		return exit.Usagef("-average-iterates %s with -ema %v: keep one parameter average (leave out -ema or -average-iterates)", o.averageIterates, o.ema)
	}
	if o.resume != "" {
		return exit.Usagef("-average-iterates %s with -resume: the average of the iterates is not carried in checkpoints (they hold the average in place of the iterate training would continue from), so such a run cannot be resumed; start a new run, or resume without -average-iterates a run that had none", o.averageIterates)
	}
	return nil
}

// checkResumeIterates refuses -resume of a checkpoint whose run averaged its iterates.
func (o *options) checkResumeIterates(c *checkpoint.Training) error {
	if v, ok := c.Settings[training.IterateAverageSetting]; ok {
		return exit.Usagef("-resume %s: the run kept an %s (-average-iterates): its checkpoint holds the average, not the iterate training would continue from, and cannot be resumed", o.resume, v)
	}
	return nil
}

// iterateAverage returns the trainer's -average-iterates (nil: off) for rule.
func (o *options) iterateAverage(rule dpoptim.Rule) *dpoptim.IterateAverage {
	switch o.averageIterates {
	case "uniform":
		return &dpoptim.IterateAverage{}
	case "step":
		return &dpoptim.IterateAverage{Weights: rateSchedule(o, rule, o.planSteps)}
	}
	return nil
}

// averageIteratesJSON is -average-iterates for the JSON summary ("" for off).
func averageIteratesJSON(v string) string {
	if v == "off" {
		return ""
	}
	return v
}
