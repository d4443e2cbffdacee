package erm

import (
	"math/rand/v2"

	"github.com/privtrain/privtrain/internal/privrand"
)

// Sampling selects how the (ε, δ) mini-batch methods (SCD, SequentialSCD,
// SVRG, SVRGPlusPlus) draw their batches.
type Sampling int

const (
	// Poisson includes each example independently with probability
	// q = (batch size)/n, fresh every round: the sampling the accountant's
	// subsampled-Gaussian RDP analyses. The batch size varies; gradient
	// estimates divide by its expectation.
	Poisson Sampling = iota
	// Shuffled draws fixed-size batches as the papers' code does: DP-SCD
	// takes consecutive chunks of a per-epoch permutation, DP-SVRG draws b
	// distinct examples uniformly each inner step. The reported ε is still
	// the Poisson analysis at the same q (as in TF Privacy), which such
	// batches do not strictly satisfy.
	Shuffled
)

// String returns "poisson" or "shuffled".
func (s Sampling) String() string {
	if s == Shuffled {
		return "shuffled"
	}
	return "poisson"
}

// poissonSample appends to buf[:0] the indices in [0, n) kept independently
// with probability q (all of them for q ≥ 1), by privrand's geometric skipping,
// so the cost is proportional to the batch, not to n.
func poissonSample(rng *rand.Rand, n int, q float64, buf []int) []int {
	p, err := privrand.NewPoisson(n, min(q, 1))
	if err != nil { // not reachable: callers pass q = size/n with 1 ≤ size
		panic("erm: " + err.Error())
	}
	return p.Sample(rng, buf)
}
