package accountant

import "errors"

// Sentinel errors. Every error returned by this package wraps one of them, so
// callers can branch with errors.Is and still print a message naming the
// offending value.
var (
	// ErrInvalidParameter reports an argument outside its domain: q not in
	// (0,1], z ≤ 0, steps < 1, δ not in (0,1), ε ≤ 0, an order ≤ 1, NaN.
	ErrInvalidParameter = errors.New("invalid parameter")

	// ErrUnreachable reports a calibration target that cannot be met, e.g. an
	// ε below what the order range can certify however large the noise.
	ErrUnreachable = errors.New("target unreachable")

	// ErrFormat reports a serialised ledger that is malformed or corrupt.
	ErrFormat = errors.New("malformed ledger")

	// ErrTotalsMismatch reports a serialised ledger whose stored RDP totals
	// disagree with the totals recomputed from its history beyond float
	// rounding: the history or the totals were altered (the checksum is
	// unkeyed, so anyone can recompute it). Errors that wrap it also wrap
	// ErrFormat.
	ErrTotalsMismatch = errors.New("ledger totals do not match its history")
)
