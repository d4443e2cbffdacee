package erm

import (
	"math/rand/v2"

	"github.com/privtrain/privtrain/internal/privrand"
)

// Sampling selects how the (ε, δ) mini-batch methods (SCD, SequentialSCD,
// SVRG, SVRGPlusPlus) draw their batches. The zero value is Poisson.
type Sampling int

const (
	// Poisson includes each example independently with probability
	// q = (batch size)/n, fresh every round: the sampling the accountant's
	// subsampled-Gaussian RDP analyses. The batch size varies; gradient
	// estimates divide by its expectation.
	Poisson Sampling = iota
	// Shuffled draws fixed-size batches as the papers' code does: DP-SCD
	// takes consecutive chunks of a per-epoch permutation, and its reported
	// ε is still the Poisson analysis at the same q (as in TF Privacy),
	// which such batches do not strictly satisfy. SVRG and SVRGPlusPlus
	// treat Shuffled as One, whose ε is a proven bound.
	Shuffled
	// One draws, in every inner step of SVRG and SVRGPlusPlus, exactly b
	// distinct examples uniformly at random from the n (b = 1: exactly one
	// example, as Algorithm 1 of the DP-ERM-revisited paper) and divides
	// their sum by b. Its ε is a proven upper bound under add/remove
	// adjacency (see svrgNoise). The other solvers do not take One: they
	// sample (and account) as Poisson for any value but Shuffled.
	One
)

// String returns "poisson", "shuffled" or "one".
func (s Sampling) String() string {
	switch s {
	case Shuffled:
		return "shuffled"
	case One:
		return "one"
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
