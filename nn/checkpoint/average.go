package checkpoint

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/nn/tensorfile"
)

// Tensor names of the parameter average.
const (
	emaPrefix = "ema/"
	emaDecay  = emaPrefix + "decay"
	emaStep   = emaPrefix + "step"
	emaParams = emaPrefix + "params"
)

// ModelParams returns the parameters a model built from c should hold: the averaged
// ones when the run kept an average (EMAParams), the raw ones (Params) otherwise. It
// is what ModelFromCheckpoint, LoadModel and LoadPredictor load, and so what evaluate,
// predict and export use; to use the raw parameters instead, set EMAParams to nil
// first (or SetParams(c.Params) on the model).
func (c *Training) ModelParams() []float64 {
	if c.EMAParams != nil {
		return c.EMAParams
	}
	return c.Params
}

// averageTensors lays c's average out as the ema/ tensors.
func (c *Training) averageTensors(dst map[string]tensorfile.Tensor) error {
	if c.EMA == 0 {
		if c.EMAParams != nil || c.EMASteps != 0 {
			return fmt.Errorf("%w: a parameter average without its decay", ErrInvalid)
		}
		return nil
	}
	if c.EMAParams != nil && len(c.EMAParams) != len(c.Params) {
		return fmt.Errorf("%w: parameter average of %d values for %d parameters", ErrInvalid, len(c.EMAParams), len(c.Params))
	}
	dst[emaDecay] = tensorfile.F64(nil, []float64{c.EMA})
	dst[emaStep] = tensorfile.F64([]int{1}, []float64{float64(c.EMASteps)})
	if c.EMAParams != nil {
		dst[emaParams] = tensorfile.F64([]int{len(c.EMAParams)}, c.EMAParams)
	}
	return nil
}

// setAverage reads the ema/ tensors (none: a run without averaging) and checks them
// against the checkpoint's parameters and step.
func (c *Training) setAverage(tensors map[string]tensorfile.Tensor) error {
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
