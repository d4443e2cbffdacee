package accountant

import (
	"fmt"
	"math"
)

// StepsPerEpoch returns ⌈n/batch⌉, the number of steps of one epoch of a training plan
// with n examples and expected batch size batch (1 ≤ batch ≤ n); 0 for other inputs.
//
// With Poisson sampling an "epoch" has no natural length; privtrain fixes it at ⌈n/b⌉
// steps, so that every epoch has the same number of steps and a plan of E epochs has
// E·⌈n/b⌉ — not ⌈E·n/b⌉, TF Privacy's convention, which is fewer steps when b does not
// divide n. Under shuffling, ⌈n/b⌉ batches visit every example once; under Poisson
// sampling each example is included ⌈n/b⌉·q ≥ 1 times in expectation. StepsPerEpoch and
// PlanSteps are the one definition that the trainer (package nn), cmd/privacy and the
// documentation share.
func StepsPerEpoch(n, batch int) int {
	if n < 1 || batch < 1 || batch > n {
		return 0
	}
	return (n-1)/batch + 1
}

// PlanSteps returns the number of steps of a plan of epochs epochs over n examples with
// expected batch size batch: epochs·⌈n/batch⌉. It is an error for n < 1, batch outside
// [1, n], epochs < 1 or a count above math.MaxInt32.
func PlanSteps(n, batch, epochs int) (int, error) {
	switch {
	case n < 1:
		return 0, fmt.Errorf("accountant: %d examples: must be ≥ 1: %w", n, ErrInvalidParameter)
	case batch < 1 || batch > n:
		return 0, fmt.Errorf("accountant: batch size %d: must be in [1, n = %d]: %w", batch, n, ErrInvalidParameter)
	case epochs < 1:
		return 0, fmt.Errorf("accountant: %d epochs: must be ≥ 1: %w", epochs, ErrInvalidParameter)
	}
	spe := StepsPerEpoch(n, batch)
	if epochs > math.MaxInt32/spe {
		return 0, fmt.Errorf("accountant: %d epochs of %d steps: more than %d steps: %w", epochs, spe, math.MaxInt32, ErrInvalidParameter)
	}
	return epochs * spe, nil
}
