package dpoptim

import "fmt"

// NonPrivate applies a rule to the plain mean gradient, for non-private baselines: no
// noise, no normalisation by an expected batch size, no privacy ledger.
type NonPrivate struct {
	rule Rule
	buf  []float64
}

// NewNonPrivate returns the non-private step around rule. The zero NonPrivate is not
// usable: its Step returns ErrConfig.
func NewNonPrivate(rule Rule) (*NonPrivate, error) {
	if rule == nil {
		return nil, fmt.Errorf("%w: nil rule", ErrConfig)
	}
	return &NonPrivate{rule: rule}, nil
}

// Name returns the rule's name.
func (n *NonPrivate) Name() string { return n.rule.Name() }

// Rule returns the wrapped rule.
func (n *NonPrivate) Rule() Rule { return n.rule }

// Step applies the rule to gradSum/batchSize. An empty batch (batchSize 0, possible under
// Poisson sampling) has no mean gradient and leaves params and the rule unchanged.
func (n *NonPrivate) Step(params, gradSum []float64, batchSize int) error {
	if n.rule == nil {
		return fmt.Errorf("%w: a zero NonPrivate: build it with NewNonPrivate", ErrConfig)
	}
	if len(gradSum) != len(params) {
		return fmt.Errorf("%w: %s: %d parameters, gradient sum of length %d", ErrLength, n.Name(), len(params), len(gradSum))
	}
	if batchSize < 0 {
		return fmt.Errorf("%w: batch size %d, want ≥ 0", ErrConfig, batchSize)
	}
	if batchSize == 0 {
		return nil
	}
	if i := firstNonFinite(gradSum); i >= 0 {
		return fmt.Errorf("%w: %s: gradient sum[%d] = %v", ErrNonFinite, n.Name(), i, gradSum[i])
	}
	if len(n.buf) != len(params) {
		n.buf = make([]float64, len(params))
	}
	b := float64(batchSize)
	for i, s := range gradSum {
		n.buf[i] = s / b
	}
	return n.rule.Step(params, n.buf)
}

// State returns the rule's state.
func (n *NonPrivate) State() State { return n.rule.State() }

// SetState restores the rule's state.
func (n *NonPrivate) SetState(state State) error { return n.rule.SetState(state) }
