package training

import (
	"fmt"

	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Parameter averaging (TrainerConfig.Averaging.EMA): the trainer keeps a dpoptim.EMA of the
// parameters that every step leaves in the model, evaluates with the average, and saves
// it in checkpoints beside the raw parameters, which the training goes on from. The
// average reads nothing but the parameters a step has released: post-processing, no
// privacy cost.
//
// Checkpoint tensors (absent for a run without averaging):
//
//	ema/decay   F64 scalar   β
//	ema/step    F64 [1]      updates folded in; the checkpoint's Step (the average starts
//	                         at step 0 with the initial parameters)
//	ema/params  F64 [d]      the average in Layout order, full precision whatever the
//	                         model's dtype (so that a resume continues it bit for bit);
//	                         absent only in a checkpoint at step 0 taken before Run

// checkEMA checks TrainerConfig.Averaging.EMA.
func checkEMA(decay float64) error {
	if decay != 0 && !(decay > 0 && decay < 1) {
		return fmt.Errorf("%w: EMA decay %v, want β in (0, 1) (0: no averaging)", ErrConfig, decay)
	}
	return nil
}

// newAverage returns the average of a run with EMA decay (nil for 0: none).
func newAverage(decay float64) *dpoptim.EMA {
	if decay == 0 {
		return nil
	}
	return &dpoptim.EMA{Decay: decay}
}

// startAverage starts the average at the model's parameters if it has not started: at
// the beginning of a run (a restored average has started, unless it was saved before the
// first Run).
func (t *Trainer) startAverage() error {
	if t.iterate != nil && !t.iterate.Started() {
		t.model.Params(t.params)
		return t.iterate.Init(t.params)
	}
	if t.average == nil || t.average.Started() {
		return nil
	}
	t.model.Params(t.params)
	return t.average.Init(t.params)
}

// updateAverage folds the parameters the last step left in the model into the average:
// the model's own values, after any rounding to its dtype, which are what the next step
// starts from.
func (t *Trainer) updateAverage() error {
	if t.iterate != nil {
		t.model.Params(t.params)
		return t.iterate.Update(t.params)
	}
	if t.average == nil {
		return nil
	}
	t.model.Params(t.params)
	return t.average.Update(t.params)
}

// EMA returns the decay of the trainer's parameter average (TrainerConfig.Averaging.EMA; 0: none).
func (t *Trainer) EMA() float64 { return t.cfg.Averaging.EMA }

// AveragedParams copies the averaged parameters into dst (NumParams entries) and returns
// true; without averaging (or before Run has started it) it leaves dst unchanged and
// returns false. The model itself holds the raw parameters the training continues from.
func (t *Trainer) AveragedParams(dst []float64) (bool, error) {
	if t.iterate != nil && t.iterate.Started() {
		if err := t.iterate.Average(dst); err != nil {
			return false, fmt.Errorf("training: iterate average: %w", err)
		}
		return true, nil
	}
	if t.average == nil || !t.average.Started() {
		return false, nil
	}
	if err := t.average.Average(dst); err != nil {
		return false, fmt.Errorf("training: averaged parameters: %w", err)
	}
	return true, nil
}

// withAverage loads the averaged parameters into the model and returns the function that
// puts the raw ones back (a no-op without an average). Raw parameters read from the model
// and written back are exactly what they were, in either dtype.
func (t *Trainer) withAverage() (restore func() error, err error) {
	if (t.average == nil || !t.average.Started()) && (t.iterate == nil || !t.iterate.Started()) {
		return func() error { return nil }, nil
	}
	raw := make([]float64, t.model.NumParams())
	t.model.Params(raw)
	avg := make([]float64, len(raw))
	if _, err := t.AveragedParams(avg); err != nil {
		return nil, err
	}
	if err := t.model.SetParams(avg); err != nil {
		return nil, fmt.Errorf("training: averaged parameters: %w", err)
	}
	return func() error { return t.model.SetParams(raw) }, nil
}

// captureAverage fills c's averaging fields from the trainer.
func (t *Trainer) captureAverage(c *checkpoint.Training) {
	if t.average == nil {
		return
	}
	c.EMA, c.EMASteps = t.cfg.Averaging.EMA, t.average.Steps()
	if t.average.Started() {
		c.EMAParams = make([]float64, t.model.NumParams())
		_ = t.average.Average(c.EMAParams) // the lengths agree: both are the model's
	}
}

// restoredAverage returns the trainer's average as checkpoint c holds it (nil for a run
// without averaging); compatible has checked that c's decay is the trainer's.
func (t *Trainer) restoredAverage(c *checkpoint.Training) (*dpoptim.EMA, error) {
	if t.cfg.Averaging.EMA == 0 {
		return nil, nil
	}
	e := newAverage(t.cfg.Averaging.EMA)
	s := dpoptim.State{Step: c.EMASteps, Vectors: map[string][]float64{"average": c.EMAParams},
		Scalars: map[string]float64{"decay": c.EMA}}
	if err := e.SetState(s); err != nil {
		return nil, fmt.Errorf("%w: parameter average: %v", checkpoint.ErrInvalid, err)
	}
	if c.EMAParams != nil && len(c.EMAParams) != t.model.NumParams() {
		return nil, fmt.Errorf("%w: parameter average of %d values, model has %d", checkpoint.ErrInvalid, len(c.EMAParams), t.model.NumParams())
	}
	return e, nil
}
