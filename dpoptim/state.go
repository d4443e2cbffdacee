package dpoptim

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// State is the state of a [Rule] or an [Optimizer] for a checkpoint: everything it needs
// to continue exactly where it stopped, and nothing of its configuration (the learning
// rate, momentum, … are the caller's to rebuild).
//
// A rule fills Step, Vectors and Scalars. A [Private] step fills Step (its own count of
// private steps, the one the privacy ledger counts), Noise and Rule, the wrapped rule's
// state, and with adaptive clipping the scalar "clip" (C_t); a [NonPrivate] step returns
// its rule's State unchanged.
type State struct {
	// Step is the number of steps taken, ≥ 0.
	Step int
	// Vectors are the per-parameter vectors by name ("m", "v", "velocity", …). Every name
	// the rule keeps is present; a vector not yet allocated (before the first step) is
	// empty. All non-empty vectors have the model's parameter count.
	Vectors map[string][]float64
	// Scalars are the finite real numbers of the state by name ("b2"); a scalar not yet
	// set (before the first step) is absent.
	Scalars map[string]float64
	// Noise is a Private step's noise generator, as encoded by [Noise.MarshalBinary]
	// (nil in a rule's state).
	Noise []byte
	// Rule is the wrapped rule's state in a Private step's state (nil in a rule's).
	Rule *State
}

// Clone returns a deep copy of s.
func (s State) Clone() State {
	c := State{Step: s.Step, Noise: slices.Clone(s.Noise), Scalars: maps.Clone(s.Scalars)}
	if s.Vectors != nil {
		c.Vectors = make(map[string][]float64, len(s.Vectors))
		for k, v := range s.Vectors {
			c.Vectors[k] = slices.Clone(v)
		}
	}
	if s.Rule != nil {
		r := s.Rule.Clone()
		c.Rule = &r
	}
	return c
}

// Equal reports whether s and o hold the same state; an empty vector equals a nil one and
// an empty map a nil one, as a state read back from a checkpoint may differ so.
func (s State) Equal(o State) bool {
	if s.Step != o.Step || !bytes.Equal(s.Noise, o.Noise) || (s.Rule == nil) != (o.Rule == nil) ||
		!maps.EqualFunc(s.Vectors, o.Vectors, slices.Equal) || !maps.Equal(s.Scalars, o.Scalars) {
		return false
	}
	return s.Rule == nil || s.Rule.Equal(*o.Rule)
}

// String lists the state's step, vector lengths and scalars, for error messages and
// tests; it prints no vector contents.
func (s State) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d", s.Step)
	for _, k := range slices.Sorted(maps.Keys(s.Vectors)) {
		fmt.Fprintf(&b, ", %s[%d]", k, len(s.Vectors[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Scalars)) {
		fmt.Fprintf(&b, ", %s=%v", k, s.Scalars[k])
	}
	if s.Noise != nil {
		fmt.Fprintf(&b, ", noise %d bytes", len(s.Noise))
	}
	if s.Rule != nil {
		fmt.Fprintf(&b, ", rule {%v}", *s.Rule)
	}
	return b.String()
}

// stateReader validates a State handed to a rule's SetState: a non-negative step, exactly
// the rule's vector names, only its scalar names, no noise or nested rule, and
// well-formed values. The first problem is kept in err.
type stateReader struct {
	rule string
	s    State
	err  error
	d    int // the length of the non-empty vectors read so far
}

// readRuleState starts reading s as the state of the named rule with the given vector
// and (optional) scalar names.
func readRuleState(rule string, s State, vectors, scalars []string) *stateReader {
	r := &stateReader{rule: rule, s: s}
	switch {
	case s.Step < 0:
		r.fail("step %d, want ≥ 0", s.Step)
	case s.Noise != nil || s.Rule != nil:
		r.fail("a noise generator or nested rule state in a rule's state")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Vectors)) {
		if !slices.Contains(vectors, k) {
			r.fail("unknown vector %q", k)
		}
	}
	for _, k := range vectors {
		if _, ok := s.Vectors[k]; !ok {
			r.fail("missing vector %q", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Scalars)) {
		if !slices.Contains(scalars, k) {
			r.fail("unknown scalar %q", k)
		}
	}
	return r
}

// readOneVector reads s as the state of a rule whose state is its step and the one vector
// key (momentum's velocity, heavy ball's delta, Nesterov's iterate).
func readOneVector(rule string, s State, key string) ([]float64, error) {
	r := readRuleState(rule, s, []string{key}, nil)
	v := r.vector(key)
	return v, r.err
}

func (r *stateReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s", ErrState, r.rule, fmt.Sprintf(format, args...))
	}
}

// vector returns a copy of a vector, nil if empty (not yet allocated). All non-empty
// vectors of one state must have the same length, checked again at the next Step.
func (r *stateReader) vector(key string) []float64 {
	v := r.s.Vectors[key]
	if r.err != nil || len(v) == 0 {
		return nil
	}
	if r.d == 0 {
		r.d = len(v)
	} else if len(v) != r.d {
		r.fail("vector %q has length %d, other vectors %d", key, len(v), r.d)
		return nil
	}
	if i := firstNonFinite(v); i >= 0 {
		r.fail("vector %q[%d] = %v", key, i, v[i])
		return nil
	}
	return slices.Clone(v)
}

// scalar returns an optional scalar and whether it is set; a set one must be finite.
func (r *stateReader) scalar(key string) (float64, bool) {
	v, ok := r.s.Scalars[key]
	if r.err != nil || !ok {
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.fail("scalar %q = %v, want a finite number", key, v)
		return 0, false
	}
	return v, true
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
