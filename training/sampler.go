package training

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// sampler draws the example indices of each logical batch with privrand's samplers, from
// the privrand.Sampler stream: with a secure key, or seeded from the run's seed for
// reproducible runs (a stream independent of the seed's noise stream, which dpoptim
// draws).
type sampler struct {
	mode    Sampling
	n       int
	batch   int
	poisson privrand.Poisson
	shuffle privrand.Shuffle
	src     *privrand.Source // replaced, never mutated in place, by restore
	perm    []int            // Shuffle: the current epoch's permutation; nil before the epoch's first batch
	idx     []int            // the last batch, reused
}

func newSampler(mode Sampling, n, batch int, seed *uint64) (*sampler, error) {
	if mode != Poisson && mode != Shuffle {
		return nil, fmt.Errorf("training: unknown sampling %v", mode)
	}
	if n < 1 || batch < 1 || batch > n {
		return nil, fmt.Errorf("training: batch size %d for %d examples, want 1 ≤ batch ≤ n", batch, n)
	}
	s := &sampler{mode: mode, n: n, batch: batch}
	var err error
	if s.poisson, err = privrand.NewPoisson(n, float64(batch)/float64(n)); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	if s.shuffle, err = privrand.NewShuffle(n, batch); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	if seed != nil {
		s.src = privrand.NewSeeded(*seed, privrand.Sampler)
	} else if s.src, err = privrand.NewSecure(privrand.Sampler); err != nil {
		return nil, fmt.Errorf("training: %w", err)
	}
	return s, nil
}

// next returns the indices of the logical batch of step k (0-based) of the current epoch,
// in increasing order under Poisson. The slice is reused by the next call.
func (s *sampler) next(k int) []int {
	switch s.mode {
	case Poisson:
		// Each example independently with probability q = batch/n, as the
		// subsampled-Gaussian analysis assumes, in O(q·n) draws (privrand.Poisson).
		s.idx = s.poisson.Sample(s.src.Rand(), s.idx)
	case Shuffle:
		if k == 0 || s.perm == nil {
			s.perm = s.shuffle.Perm(s.src.Rand())
		}
		s.idx = append(s.idx[:0], s.shuffle.Batch(s.perm, k)...)
	}
	return s.idx
}

// endEpoch forgets the finished epoch's permutation.
func (s *sampler) endEpoch() { s.perm = nil }

func (s *sampler) kind() string {
	if _, seeded := s.src.Seed(); seeded {
		return checkpoint.SamplerSeeded
	}
	return checkpoint.SamplerSecure
}

// state returns the generator's state (nil for a secure sampler).
func (s *sampler) state() []byte {
	if _, seeded := s.src.Seed(); !seeded {
		return nil
	}
	b, err := s.src.MarshalBinary()
	if err != nil { // not reachable: the encoding does not fail
		panic(err)
	}
	return b
}

// restore sets the generator from a checkpoint: kind is checkpoint.SamplerSeeded or checkpoint.SamplerSecure,
// state the generator state of a seeded sampler, perm the current epoch's permutation
// under Shuffle (nil at an epoch boundary). On error s is unchanged.
func (s *sampler) restore(kind string, state []byte, perm []int) error {
	src := new(privrand.Source)
	switch kind {
	case checkpoint.SamplerSeeded:
		if err := src.UnmarshalBinary(fromLegacyState(state)); err != nil {
			return fmt.Errorf("sampler state: %v", err)
		}
		if _, seeded := src.Seed(); !seeded || src.Stream() != privrand.Sampler {
			return fmt.Errorf("sampler state: a %s %v generator, want a seeded sampler", src, src.Stream())
		}
	case checkpoint.SamplerSecure:
		if len(state) != 0 {
			return fmt.Errorf("sampler state of %d bytes for a secure sampler", len(state))
		}
		var err error
		if src, err = privrand.NewSecure(privrand.Sampler); err != nil {
			return fmt.Errorf("reseeding the sampler: %v", err)
		}
	default:
		return fmt.Errorf("sampler kind %q", kind)
	}
	if perm != nil {
		if s.mode != Shuffle {
			return fmt.Errorf("a permutation for %v sampling", s.mode)
		}
		if err := checkpoint.CheckPerm(perm, s.n); err != nil {
			return err
		}
	}
	s.src = src
	s.perm = perm
	return nil
}

// fromLegacyState rewrites the sampler state of checkpoints written before
// internal/privrand, math/rand/v2's bare ChaCha8 encoding ("chacha8:…"), into privrand's
// encoding of a seeded Sampler stream, and returns any other state unchanged. The old
// state holds no seed; seed 0 stands in for it, harmlessly: a sampler never reports its
// seed (the checkpoint's seed is the noise's), and the draws continue from the saved
// ChaCha8 position whatever key began them.
func fromLegacyState(state []byte) []byte {
	if !bytes.HasPrefix(state, []byte("chacha8:")) {
		return state
	}
	b := append([]byte(privrand.Magic), privrand.Version, 1, byte(privrand.Sampler))
	b = binary.LittleEndian.AppendUint64(b, 0)
	return append(b, state...)
}
