package dpoptim

import "errors"

// Sentinel errors; every error of this package wraps one of them and names the offending
// value, so callers can branch with errors.Is.
var (
	// ErrConfig reports a bad hyper-parameter or configuration value: z < 0 or NaN,
	// C ≤ 0, q outside (0, 1], n < 1, a negative or non-finite learning rate, a momentum
	// outside [0, 1), a nil rule, recorder or schedule.
	ErrConfig = errors.New("dpoptim: invalid configuration")
	// ErrLength reports vectors of mismatched lengths.
	ErrLength = errors.New("dpoptim: length mismatch")
	// ErrNonFinite reports a NaN or infinite value in an input vector.
	ErrNonFinite = errors.New("dpoptim: non-finite value")
	// ErrState reports a state map (or serialised noise generator) that cannot be restored.
	ErrState = errors.New("dpoptim: invalid state")
)
