package erm

import (
	"math"
	"math/rand/v2"
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
// with probability q, skipping ahead by geometric gaps so the cost is
// proportional to the batch, not to n.
func poissonSample(rng *rand.Rand, n int, q float64, buf []int) []int {
	buf = buf[:0]
	if q >= 1 {
		for i := range n {
			buf = append(buf, i)
		}
		return buf
	}
	logKeep := math.Log1p(-q)
	for i := -1; ; {
		// Gap to the next kept index: P(gap = k) = (1−q)^{k−1} q, k ≥ 1.
		u := 1 - rng.Float64() // in (0, 1]
		i += 1 + int(math.Floor(math.Log(u)/logKeep))
		if i >= n || i < 0 {
			return buf
		}
		buf = append(buf, i)
	}
}
