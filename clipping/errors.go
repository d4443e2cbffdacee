package clipping

import "errors"

var (
	// ErrShape reports taps, masks or buffers whose sizes do not fit together.
	ErrShape = errors.New("clipping: shape mismatch")
	// ErrRule reports a clipping rule that is invalid or does not fit the network.
	ErrRule = errors.New("clipping: invalid rule")
	// ErrNonFinite reports an example whose gradient norm is NaN or infinite; clipping it
	// would poison the sum.
	ErrNonFinite = errors.New("clipping: non-finite gradient")
)
