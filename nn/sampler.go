package nn

import (
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
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

// sampler draws the example indices of each logical batch. Its random source is a ChaCha8
// generator seeded from crypto/rand, or from a seed for reproducible runs.
type sampler struct {
	mode   Sampling
	n      int
	batch  int
	q      float64
	seeded bool
	src    *rand.ChaCha8
	rng    *rand.Rand
	perm   []int // Shuffle: the current epoch's permutation; nil before the epoch's first batch
	idx    []int // the last batch, reused
}

func newSampler(mode Sampling, n, batch int, seed *uint64) (*sampler, error) {
	if mode != Poisson && mode != Shuffle {
		return nil, fmt.Errorf("nn: unknown sampling %v", mode)
	}
	if n < 1 || batch < 1 || batch > n {
		return nil, fmt.Errorf("nn: batch size %d for %d examples, want 1 ≤ batch ≤ n", batch, n)
	}
	s := &sampler{mode: mode, n: n, batch: batch, q: float64(batch) / float64(n)}
	var key [32]byte
	if seed != nil {
		key = samplerKey(*seed)
		s.seeded = true
	} else if _, err := crand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("nn: seeding the sampler from crypto/rand: %w", err)
	}
	s.src = rand.NewChaCha8(key)
	s.rng = rand.New(s.src)
	return s, nil
}

// samplerKey derives the sampler's ChaCha8 key from a run's seed. dpoptim's noise uses the
// seed itself as its key; hashing it with a label keeps the two streams unrelated, so the
// batches and the noise of a seeded run are not correlated.
func samplerKey(seed uint64) [32]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	return sha256.Sum256(append([]byte("privtrain nn sampler\x00"), b[:]...))
}

// next returns the indices of the logical batch of step k (0-based) of the current epoch,
// in increasing order under Poisson. The slice is reused by the next call.
func (s *sampler) next(k int) []int {
	s.idx = s.idx[:0]
	switch s.mode {
	case Poisson:
		// One Bernoulli(q) draw per example per step: P(Float64() < q) = q to within 2^-53,
		// independently across examples and steps, as the subsampled-Gaussian analysis
		// assumes. Geometric skipping would be faster but harder to check; this is n
		// ChaCha8 draws per step, well under a millisecond for n = 60,000.
		for i := range s.n {
			if s.rng.Float64() < s.q {
				s.idx = append(s.idx, i)
			}
		}
	case Shuffle:
		if k == 0 || s.perm == nil {
			s.perm = s.rng.Perm(s.n)
		}
		lo := min(k*s.batch, s.n)
		hi := min(lo+s.batch, s.n)
		s.idx = append(s.idx, s.perm[lo:hi]...)
	}
	return s.idx
}

// endEpoch forgets the finished epoch's permutation.
func (s *sampler) endEpoch() { s.perm = nil }

// Sampler state in a checkpoint: a seeded sampler saves its exact ChaCha8 position so a
// resumed run draws the same batches; a secure one saves nothing and is reseeded from
// crypto/rand on restore, for the reason dpoptim.Noise gives: whoever reads the checkpoint
// could otherwise predict which examples the remaining steps include, which is exactly the
// secret that privacy amplification by subsampling rests on.
const (
	samplerSecure = "secure"
	samplerSeeded = "seeded"
)

func (s *sampler) kind() string {
	if s.seeded {
		return samplerSeeded
	}
	return samplerSecure
}

// state returns the generator's state (nil for a secure sampler).
func (s *sampler) state() []byte {
	if !s.seeded {
		return nil
	}
	b, err := s.src.MarshalBinary()
	if err != nil { // not reachable: ChaCha8 encoding does not fail
		panic(err)
	}
	return b
}

// restore sets the generator from a checkpoint: kind is samplerSeeded or samplerSecure,
// state the ChaCha8 state of a seeded sampler, perm the current epoch's permutation under
// Shuffle (nil at an epoch boundary). On error s is unchanged.
func (s *sampler) restore(kind string, state []byte, perm []int) error {
	var src *rand.ChaCha8
	switch kind {
	case samplerSeeded:
		src = new(rand.ChaCha8)
		if err := src.UnmarshalBinary(state); err != nil {
			return fmt.Errorf("sampler state: %v", err)
		}
	case samplerSecure:
		if len(state) != 0 {
			return fmt.Errorf("sampler state of %d bytes for a secure sampler", len(state))
		}
		var key [32]byte
		if _, err := crand.Read(key[:]); err != nil {
			return fmt.Errorf("reseeding the sampler from crypto/rand: %w", err)
		}
		src = rand.NewChaCha8(key)
	default:
		return fmt.Errorf("sampler kind %q", kind)
	}
	if perm != nil {
		if s.mode != Shuffle {
			return fmt.Errorf("a permutation for %v sampling", s.mode)
		}
		if err := checkPerm(perm, s.n); err != nil {
			return err
		}
	}
	s.src, s.rng, s.seeded = src, rand.New(src), kind == samplerSeeded
	s.perm = perm
	return nil
}

// checkPerm reports whether perm is a permutation of 0…n−1.
func checkPerm(perm []int, n int) error {
	if len(perm) != n {
		return fmt.Errorf("permutation of %d entries for %d examples", len(perm), n)
	}
	seen := make([]bool, n)
	for _, v := range perm {
		if v < 0 || v >= n || seen[v] {
			return fmt.Errorf("permutation entry %d is repeated or out of range", v)
		}
		seen[v] = true
	}
	return nil
}
