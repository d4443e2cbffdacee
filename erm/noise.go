package erm

import (
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// NewNoise returns a ChaCha8 generator seeded from seed, for reproducible
// runs. Seeded noise is predictable by anyone who knows the seed: release
// models trained with it only if the seed stays secret.
func NewNoise(seed uint64) *rand.Rand {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	binary.LittleEndian.PutUint64(key[8:], 0x5851f42d4c957f2d) // separates these streams from data.Synthetic's
	return rand.New(rand.NewChaCha8(key))
}

// NewSecureNoise returns a ChaCha8 generator keyed from crypto/rand, the
// default for releases.
func NewSecureNoise() (*rand.Rand, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("erm: reading crypto/rand: %w", err)
	}
	return rand.New(rand.NewChaCha8(key)), nil
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
// fresh uniform draw, reusing one permutation buffer (partial Fisher–Yates).
type sampler struct {
	perm []int
}

func newSampler(n int) *sampler {
	s := &sampler{perm: make([]int, n)}
	for i := range s.perm {
		s.perm[i] = i
	}
	return s
}

// sample returns m distinct indices chosen uniformly at random; the slice
// aliases the sampler's buffer and is valid until the next call.
func (s *sampler) sample(rng *rand.Rand, m int) []int {
	n := len(s.perm)
	for k := range m {
		j := k + rng.IntN(n-k)
		s.perm[k], s.perm[j] = s.perm[j], s.perm[k]
	}
	return s.perm[:m]
}
