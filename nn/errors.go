package nn

import "errors"

var (
	// ErrSpec reports a network description that cannot be built (shapes that do not fit,
	// a parametrised layer without taps, a bad batch size).
	ErrSpec = errors.New("nn: invalid model spec")
	// ErrBatch reports an input batch that does not fit the model: wrong lengths, a label
	// outside [0, NumClasses), a non-finite input value.
	ErrBatch = errors.New("nn: invalid batch")
	// ErrParams reports a parameter vector of the wrong length or with non-finite values.
	ErrParams = errors.New("nn: invalid parameters")
	// ErrTrainConfig reports a training configuration that cannot run (package training's
	// Trainer; here, the front-end features of a data set that does not fit the model):
	// datasets that do not fit the model, a batch size outside [1, n], no epochs, a
	// private plan without clipping, δ outside (0, 1), neither a noise multiplier nor a
	// target ε.
	ErrTrainConfig = errors.New("nn: invalid training configuration")
)
