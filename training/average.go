package nn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Parameter averaging (TrainerConfig.EMA): the trainer keeps a dpoptim.EMA of the
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

// Tensor names of the parameter average.
const (
	emaPrefix = "ema/"
	emaDecay  = emaPrefix + "decay"
	emaStep   = emaPrefix + "step"
	emaParams = emaPrefix + "params"
)

// checkEMA checks TrainerConfig.EMA.
func checkEMA(decay float64) error {
	if decay != 0 && !(decay > 0 && decay < 1) {
		return fmt.Errorf("%w: EMA decay %v, want β in (0, 1) (0: no averaging)", ErrTrainConfig, decay)
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
	if t.average == nil {
		return nil
	}
	t.model.Params(t.params)
	return t.average.Update(t.params)
}

// EMA returns the decay of the trainer's parameter average (TrainerConfig.EMA; 0: none).
func (t *Trainer) EMA() float64 { return t.cfg.EMA }

// AveragedParams copies the averaged parameters into dst (NumParams entries) and returns
// true; without averaging (or before Run has started it) it leaves dst unchanged and
// returns false. The model itself holds the raw parameters the training continues from.
func (t *Trainer) AveragedParams(dst []float64) (bool, error) {
	if t.average == nil || !t.average.Started() {
		return false, nil
	}
	if err := t.average.Average(dst); err != nil {
		return false, fmt.Errorf("nn: averaged parameters: %w", err)
	}
	return true, nil
}

// withAverage loads the averaged parameters into the model and returns the function that
// puts the raw ones back (a no-op without an average). Raw parameters read from the model
// and written back are exactly what they were, in either dtype.
func (t *Trainer) withAverage() (restore func() error, err error) {
	if t.average == nil || !t.average.Started() {
		return func() error { return nil }, nil
	}
	raw := make([]float64, t.model.NumParams())
	t.model.Params(raw)
	avg := make([]float64, len(raw))
	if err := t.average.Average(avg); err != nil {
		return nil, fmt.Errorf("nn: averaged parameters: %w", err)
	}
	if err := t.model.SetParams(avg); err != nil {
		return nil, fmt.Errorf("nn: averaged parameters: %w", err)
	}
	return func() error { return t.model.SetParams(raw) }, nil
}

// captureAverage fills c's averaging fields from the trainer.
func (t *Trainer) captureAverage(c *Checkpoint) {
	if t.average == nil {
		return
	}
	c.EMA, c.EMASteps = t.cfg.EMA, t.average.Steps()
	if t.average.Started() {
		c.EMAParams = make([]float64, t.model.NumParams())
		_ = t.average.Average(c.EMAParams) // the lengths agree: both are the model's
	}
}

// restoredAverage returns the trainer's average as checkpoint c holds it (nil for a run
// without averaging); compatible has checked that c's decay is the trainer's.
func (t *Trainer) restoredAverage(c *Checkpoint) (*dpoptim.EMA, error) {
	if t.cfg.EMA == 0 {
		return nil, nil
	}
	e := newAverage(t.cfg.EMA)
	s := dpoptim.State{Step: c.EMASteps, Vectors: map[string][]float64{"average": c.EMAParams},
		Scalars: map[string]float64{"decay": c.EMA}}
	if err := e.SetState(s); err != nil {
		return nil, fmt.Errorf("%w: parameter average: %v", ErrCheckpoint, err)
	}
	if c.EMAParams != nil && len(c.EMAParams) != t.model.NumParams() {
		return nil, fmt.Errorf("%w: parameter average of %d values, model has %d", ErrCheckpoint, len(c.EMAParams), t.model.NumParams())
	}
	return e, nil
}

// ModelParams returns the parameters a model built from c should hold: the averaged
// ones when the run kept an average (EMAParams), the raw ones (Params) otherwise. It
// is what ModelFromCheckpoint, LoadModel and LoadPredictor load, and so what evaluate,
// predict and export use; to use the raw parameters instead, set EMAParams to nil
// first (or SetParams(c.Params) on the model).
func (c *Checkpoint) ModelParams() []float64 {
	if c.EMAParams != nil {
		return c.EMAParams
	}
	return c.Params
}

// averageTensors lays c's average out as the ema/ tensors.
func (c *Checkpoint) averageTensors(dst map[string]checkpoint.Tensor) error {
	if c.EMA == 0 {
		if c.EMAParams != nil || c.EMASteps != 0 {
			return fmt.Errorf("%w: a parameter average without its decay", ErrCheckpoint)
		}
		return nil
	}
	if c.EMAParams != nil && len(c.EMAParams) != len(c.Params) {
		return fmt.Errorf("%w: parameter average of %d values for %d parameters", ErrCheckpoint, len(c.EMAParams), len(c.Params))
	}
	dst[emaDecay] = checkpoint.F64(nil, []float64{c.EMA})
	dst[emaStep] = checkpoint.F64([]int{1}, []float64{float64(c.EMASteps)})
	if c.EMAParams != nil {
		dst[emaParams] = checkpoint.F64([]int{len(c.EMAParams)}, c.EMAParams)
	}
	return nil
}

// setAverage reads the ema/ tensors (none: a run without averaging) and checks them
// against the checkpoint's parameters and step.
func (c *Checkpoint) setAverage(tensors map[string]checkpoint.Tensor) error {
	found := false
	for name := range tensors {
		if strings.HasPrefix(name, emaPrefix) {
			found = true
			if !slices.Contains([]string{emaDecay, emaStep, emaParams}, name) {
				return fmt.Errorf("unknown tensor %q", name)
			}
		}
	}
	if !found {
		return nil
	}
	scalar := func(name string, rank int) (float64, error) {
		t, ok := tensors[name]
		if !ok {
			return 0, fmt.Errorf("parameter average without %q", name)
		}
		v, err := t.Float64s()
		if err != nil || len(t.Shape) != rank || len(v) != 1 {
			return 0, fmt.Errorf("%s: %v of shape %v, want one F64 value", name, t.DType, t.Shape)
		}
		return v[0], nil
	}
	decay, err := scalar(emaDecay, 0)
	if err != nil {
		return err
	}
	if !(decay > 0 && decay < 1) {
		return fmt.Errorf("%s = %v, want β in (0, 1)", emaDecay, decay)
	}
	step, err := scalar(emaStep, 1)
	if err != nil {
		return err
	}
	if !(step >= 0) || step != math.Trunc(step) || step > math.MaxInt32 {
		return fmt.Errorf("%s = %v, want a step count", emaStep, step)
	}
	c.EMA, c.EMASteps = decay, int(step)
	if t, ok := tensors[emaParams]; ok {
		v, err := t.Float64s()
		if err != nil || len(t.Shape) != 1 {
			return fmt.Errorf("%s: %v of shape %v, want a F64 vector", emaParams, t.DType, t.Shape)
		}
		if len(v) != len(c.Params) {
			return fmt.Errorf("%s holds %d values for %d parameters", emaParams, len(v), len(c.Params))
		}
		for i, x := range v {
			if !finite(x) {
				return fmt.Errorf("%s[%d] = %v", emaParams, i, x)
			}
		}
		c.EMAParams = v
	}
	switch {
	case c.EMAParams == nil && (c.EMASteps != 0 || c.Step != 0):
		return errors.New("a parameter average without its values after the first step")
	case c.EMAParams != nil && c.EMASteps != c.Step:
		return fmt.Errorf("parameter average of %d steps at step %d", c.EMASteps, c.Step)
	}
	return nil
}
