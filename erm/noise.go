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

// NewSecureNoise returns a ChaCha8 generator with a secure key, the
// default for releases.
func NewSecureNoise() (*rand.Rand, error) {
	src, err := privrand.NewSecure(privrand.ERM)
	if err != nil {
		return nil, fmt.Errorf("erm: %w", err)
	}
	return src.Rand(), nil
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
