package dpoptim

import (
	"fmt"
	"math"
	"slices"
)

// stateReader validates a state map handed to SetState: every expected key present,
// nothing else, well-formed values.
type stateReader struct {
	rule  string
	state map[string][]float64
	err   error
}

func newStateReader(rule string, state map[string][]float64, keys ...string) *stateReader {
	r := &stateReader{rule: rule, state: state}
	for k := range state {
		if !slices.Contains(keys, k) {
			r.fail("unknown key %q", k)
			return r
		}
	}
	for _, k := range keys {
		if _, ok := state[k]; !ok {
			r.fail("missing key %q", k)
			return r
		}
	}
	return r
}

func (r *stateReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s", ErrState, r.rule, fmt.Sprintf(format, args...))
	}
}

// count reads a non-negative integer stored as a length-1 slice.
func (r *stateReader) count(key string) int {
	v := r.state[key]
	if r.err != nil {
		return 0
	}
	if len(v) != 1 || !(v[0] >= 0) || v[0] != math.Trunc(v[0]) || v[0] > 1<<53 {
		r.fail("%q = %v, want one non-negative integer", key, v)
		return 0
	}
	return int(v[0])
}

// scalar reads a finite number stored as a length-1 slice.
func (r *stateReader) scalar(key string) float64 {
	v := r.state[key]
	if r.err != nil {
		return 0
	}
	if len(v) != 1 || math.IsNaN(v[0]) || math.IsInf(v[0], 0) {
		r.fail("%q = %v, want one finite number", key, v)
		return 0
	}
	return v[0]
}

// vector returns a copy of a vector, nil if empty (not yet allocated). All non-empty
// vectors of one state must have the same length d, checked again at the next Step.
func (r *stateReader) vector(key string, d *int) []float64 {
	v := r.state[key]
	if r.err != nil || len(v) == 0 {
		return nil
	}
	if *d == 0 {
		*d = len(v)
	} else if len(v) != *d {
		r.fail("%q has length %d, other vectors %d", key, len(v), *d)
		return nil
	}
	return slices.Clone(v)
}

// checkLengths reports a length mismatch between params and grad, or between them and
// the d that the rule's state was built for.
func checkLengths(rule string, params, grad []float64, stateLen int) error {
	if len(params) != len(grad) {
		return fmt.Errorf("%w: %s: %d parameters, gradient of length %d", ErrLength, rule, len(params), len(grad))
	}
	if stateLen != 0 && stateLen != len(params) {
		return fmt.Errorf("%w: %s: state for %d parameters, got %d", ErrLength, rule, stateLen, len(params))
	}
	return nil
}

// scalarState returns v as a length-1 slice.
func scalarState(v float64) []float64 { return []float64{v} }
