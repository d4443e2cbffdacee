package nn

import "errors"

var (
	// ErrSpec reports a network description that cannot be built (shapes that do not fit,
	// a parametrised layer without taps, a bad batch size).
	ErrSpec = errors.New("nn: invalid model spec")
	// ErrBatch reports an input batch or data set that does not fit the model: wrong
	// lengths or shapes, a label outside [0, NumClasses), a non-finite input value.
	ErrBatch = errors.New("nn: invalid batch")
	// ErrParams reports a parameter vector of the wrong length or with non-finite values.
	ErrParams = errors.New("nn: invalid parameters")
)
