package erm

import (
	"fmt"
	"math/rand/v2"

	"github.com/privtrain/privtrain/internal/privrand"
)

// NewNoise returns the privrand.ERM stream of seed, a ChaCha8 generator keyed
// by a hash of the seed and the stream's name (unrelated to data.Synthetic's
// and to any other use of the same seed), for reproducible runs. Seeded noise
// is predictable by anyone who knows the seed: release models trained with it
// only if the seed stays secret.
func NewNoise(seed uint64) *rand.Rand {
	return privrand.NewSeeded(seed, privrand.ERM).Rand()
}

// NewSecureNoise returns a ChaCha8 generator keyed from crypto/rand, the
// default for releases.
func NewSecureNoise() (*rand.Rand, error) {
	src, err := privrand.NewSecure(privrand.ERM)
	if err != nil {
		return nil, fmt.Errorf("erm: %w", err)
	}
	return src.Rand(), nil
}

// laplace draws from the Laplace distribution with scale b (density
// exp(−|x|/b)/(2b), variance 2b²) as the difference of two exponentials.
// The scale is b, as the DP accelerated methods paper's Laplace mechanism
// requires; the authors' MATLAB laprnd treats b as the standard deviation,
// adding √2 too little noise (digest §2.7), which is not followed here.
func laplace(rng *rand.Rand, b float64) float64 {
	return b * (rng.ExpFloat64() - rng.ExpFloat64())
}

// addLaplace adds iid Laplace(b) noise to every entry of v; b = 0 adds none.
func addLaplace(rng *rand.Rand, v []float64, b float64) {
	if b == 0 {
		return
	}
	for j := range v {
		v[j] += laplace(rng, b)
	}
}

// addGaussian adds iid N(0, sigma²) noise to every entry of v; sigma = 0
// adds none.
func addGaussian(rng *rand.Rand, v []float64, sigma float64) {
	if sigma == 0 {
		return
	}
	for j := range v {
		v[j] += sigma * rng.NormFloat64()
	}
}

// sampler draws index sets of a fixed size without replacement, each from a
// fresh uniform draw (privrand.Subset: a partial Fisher–Yates shuffle of one
// reused buffer).
type sampler struct {
	subset *privrand.Subset
}

func newSampler(n int) *sampler { return &sampler{privrand.NewSubset(n)} }

// sample returns m distinct indices chosen uniformly at random; the slice
// aliases the sampler's buffer and is valid until the next call.
func (s *sampler) sample(rng *rand.Rand, m int) []int { return s.subset.Sample(rng, m) }
