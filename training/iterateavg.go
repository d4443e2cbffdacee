package training

import (
	"errors"
	"fmt"

	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Iterate averaging (TrainerConfig.Averaging.Iterate): DP-LSSGD's averaged output
// (dpoptim.IterateAverage; Theorems 2 and 3 of Wang et al.). The trainer folds the
// parameters every step leaves in the model into the average, evaluates with it (the
// periodic evaluations, Result, Evaluate) and keeps training from the raw iterate. Like
// the EMA it reads only the released parameters: post-processing, no privacy cost.
//
// The average is not carried in checkpoints as a resumable state: a checkpoint of a run
// with iterate averaging holds the average θ̃ as its parameters (the released output,
// which evaluate, predict and export then load) and the setting IterateAverageSetting,
// and Restore refuses it, as it refuses to resume any run with iterate averaging.

// IterateAverageSetting is the Settings key under which a checkpoint of a run with
// iterate averaging names its average (dpoptim.IterateAverage.Name).
const IterateAverageSetting = "iterate-average"

// errIterateResume is Restore's refusal for iterate averaging.
var errIterateResume = errors.New("an iterate average (DP-LSSGD's averaged output) is not carried in checkpoints: a checkpoint of such a run holds the average in place of the iterate the training would continue from, so it cannot be resumed; start a new run")

// newIterateAverage returns the trainer's own iterate average for cfg (nil: none), after
// checking that it is not combined with an EMA.
func newIterateAverage(cfg *TrainerConfig) (*dpoptim.IterateAverage, error) {
	if cfg.Averaging.Iterate == nil {
		return nil, nil
	}
	if cfg.Averaging.EMA != 0 {
		return nil, fmt.Errorf("%w: an EMA (decay %v) and an iterate average at once; keep one parameter average", ErrConfig, cfg.Averaging.EMA)
	}
	if v, ok := cfg.Settings[IterateAverageSetting]; ok {
		return nil, fmt.Errorf("%w: setting %q = %q is the trainer's own; leave it out of Settings", ErrConfig, IterateAverageSetting, v)
	}
	a := &dpoptim.IterateAverage{Weights: cfg.Averaging.Iterate.Weights}
	if cfg.Settings == nil {
		cfg.Settings = map[string]string{}
	}
	cfg.Settings[IterateAverageSetting] = a.Name()
	return a, nil
}

// IterateAverage returns the name of the trainer's iterate average ("" for none).
func (t *Trainer) IterateAverage() string {
	if t.iterate == nil {
		return ""
	}
	return t.iterate.Name()
}

// checkIterateResume refuses to resume a run with iterate averaging, or from the
// checkpoint of one.
func (t *Trainer) checkIterateResume(c *checkpoint.Training) error {
	if t.iterate != nil {
		return fmt.Errorf("%w: %v", ErrMismatch, errIterateResume)
	}
	if v, ok := c.Settings[IterateAverageSetting]; ok {
		return fmt.Errorf("%w: the checkpoint is of a run with %s: %v", ErrMismatch, v, errIterateResume)
	}
	return nil
}

// captureIterate puts the iterate average in c's parameters.
func (t *Trainer) captureIterate(c *checkpoint.Training) error {
	if t.iterate == nil || !t.iterate.Started() {
		return nil
	}
	avg := make([]float64, len(c.Params))
	if err := t.iterate.Average(avg); err != nil {
		return fmt.Errorf("training: iterate average: %w", err)
	}
	c.Params = avg
	return nil
}
