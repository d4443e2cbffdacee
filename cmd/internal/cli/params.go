package cli

import (
	"flag"
	"fmt"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// The -params flag of evaluate, predict and export: which parameters of a checkpoint of a
// run with train -ema the model uses.

// Params values.
const (
	ParamsAveraged = "averaged"
	ParamsRaw      = "raw"
)

// AddParamsFlag adds -params to fs.
func AddParamsFlag(fs *flag.FlagSet) *string {
	return fs.String("params", ParamsAveraged, "which parameters of a checkpoint of a run with train -ema: averaged (the parameter average, what train evaluated) | raw (the last training iterate); a checkpoint without an average has only the raw ones")
}

// CheckParams checks a -params value.
func CheckParams(which string) error {
	if which != ParamsAveraged && which != ParamsRaw {
		return exit.Usagef("-params %q: want %s or %s", which, ParamsAveraged, ParamsRaw)
	}
	return nil
}

// SelectParams makes models built from c use the parameters -params names: averaged
// keeps c's average (if it has one), raw drops it.
func SelectParams(c *checkpoint.Training, which string) error {
	if err := CheckParams(which); err != nil {
		return err
	}
	if which == ParamsRaw {
		if v, ok := c.Settings[training.IterateAverageSetting]; ok {
			return exit.Usagef("-params %s: the checkpoint is of a run with train -average-iterates and holds only its %s, not the last iterate; use -params %s", ParamsRaw, v, ParamsAveraged)
		}
		c.EMAParams = nil
	}
	return nil
}

// ParamsDescription says which parameters a model built from c holds, for reports:
// "averaged (EMA β = 0.999)" or "raw".
func ParamsDescription(c *checkpoint.Training) string {
	if c.EMAParams != nil {
		return fmt.Sprintf("%s (EMA β = %g)", ParamsAveraged, c.EMA)
	}
	if v, ok := c.Settings[training.IterateAverageSetting]; ok {
		return fmt.Sprintf("%s (%s, train -average-iterates)", ParamsAveraged, v)
	}
	return ParamsRaw
}

// PredictorParams loads the checkpoint named by -checkpoint (LoadCheckpoint) and its
// model, with the parameters -params names.
func PredictorParams(path, which string, s *Signing) (*checkpoint.Training, *nn.Predictor, error) {
	if err := CheckParams(which); err != nil {
		return nil, nil, err
	}
	c, err := LoadCheckpoint(path, s)
	if err != nil {
		return nil, nil, err
	}
	if err := SelectParams(c, which); err != nil {
		return nil, nil, err
	}
	if err := PrepareCheckpointPriors(c, s.stderr()); err != nil {
		return nil, nil, fmt.Errorf("-checkpoint %s: %w", path, err)
	}
	m, err := nn.ModelFromCheckpoint(c, 128)
	if err != nil {
		return nil, nil, fmt.Errorf("-checkpoint %s: %w", path, err)
	}
	return c, nn.NewPredictor(m), nil
}
