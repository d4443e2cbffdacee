package checkpoint

import (
	"fmt"

	"github.com/privtrain/privtrain/internal/privrand"
)

// Sampling says how the logical batches of a training run are drawn from the training set.
type Sampling int

const (
	// Poisson includes every example in every step independently with probability
	// q = BatchSize/n, so the batch size varies from step to step around BatchSize. It is
	// the sampling that the privacy accountant's subsampled-Gaussian analysis assumes,
	// and the default.
	Poisson Sampling = iota
	// Shuffle splits a fresh random permutation of the training set into batches of
	// BatchSize examples (the last one of an epoch smaller) and visits each example once
	// per epoch. The accountant still computes ε as if batches were Poisson-sampled with
	// q = BatchSize/n, a guarantee that is not proven for shuffling: use it for
	// comparisons with non-private training, not for reported privacy.
	Shuffle
)

// String returns "poisson" or "shuffle".
func (s Sampling) String() string {
	switch s {
	case Poisson:
		return "poisson"
	case Shuffle:
		return "shuffle"
	}
	return fmt.Sprintf("Sampling(%d)", int(s))
}

// ParseSampling parses "poisson" or "shuffle".
func ParseSampling(s string) (Sampling, error) {
	switch s {
	case "poisson":
		return Poisson, nil
	case "shuffle":
		return Shuffle, nil
	}
	return 0, fmt.Errorf("nn: unknown sampling %q (want poisson or shuffle)", s)
}

// CheckPerm reports whether perm is a permutation of 0…n−1.
func CheckPerm(perm []int, n int) error { return privrand.CheckPerm(perm, n) }

// Sampler state in a checkpoint: a seeded sampler saves its exact generator position
// (privrand's encoding) so a resumed run draws the same batches; a secure one saves
// nothing and gets a fresh secure key on restore: whoever reads the checkpoint could
// otherwise predict which examples the remaining steps include, which is exactly the
// secret that privacy amplification by subsampling rests on.
const (
	SamplerSecure = "secure"
	SamplerSeeded = "seeded"
)
