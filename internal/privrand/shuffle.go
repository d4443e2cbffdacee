package privrand

import (
	"fmt"
	"math/rand/v2"
)

// Shuffle is the shuffle sampler: each epoch visits a fresh uniform permutation of the n
// examples in consecutive batches of size batch, the last one smaller when batch does not
// divide n. The caller keeps the epoch's permutation (a checkpoint stores
// it), so a Shuffle is only its two sizes.
type Shuffle struct {
	n, batch int
}

// NewShuffle returns the sampler of batches of size batch over n examples, 1 ≤ batch ≤ n.
func NewShuffle(n, batch int) (Shuffle, error) {
	if n < 1 || batch < 1 || batch > n {
		return Shuffle{}, fmt.Errorf("privrand: batch size %d for %d examples, want 1 ≤ batch ≤ n", batch, n)
	}
	return Shuffle{n: n, batch: batch}, nil
}

// StepsPerEpoch returns ⌈n/batch⌉.
func (s Shuffle) StepsPerEpoch() int { return (s.n + s.batch - 1) / s.batch }

// Perm draws an epoch's permutation.
func (s Shuffle) Perm(r *rand.Rand) []int { return r.Perm(s.n) }

// Batch returns batch k (0-based) of the epoch whose permutation is perm; it aliases
// perm. k past the epoch gives an empty batch.
func (s Shuffle) Batch(perm []int, k int) []int {
	lo := min(k*s.batch, s.n)
	hi := min(lo+s.batch, s.n)
	return perm[lo:hi]
}

// CheckPerm reports whether perm is a permutation of 0…n−1, for a permutation read from
// a checkpoint.
func CheckPerm(perm []int, n int) error {
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

// Subset draws m distinct indices of n uniformly at random, every draw independent of the
// last, by a partial Fisher–Yates shuffle of a buffer it keeps.
type Subset struct {
	perm []int
}

// NewSubset returns the sampler over n ≥ 0 indices.
func NewSubset(n int) *Subset {
	s := &Subset{perm: make([]int, max(n, 0))}
	for i := range s.perm {
		s.perm[i] = i
	}
	return s
}

// Sample returns m distinct indices, 0 ≤ m ≤ n, chosen uniformly; the slice aliases the
// sampler's buffer and is valid until the next call.
func (s *Subset) Sample(r *rand.Rand, m int) []int {
	n := len(s.perm)
	for k := range m {
		j := k + r.IntN(n-k)
		s.perm[k], s.perm[j] = s.perm[j], s.perm[k]
	}
	return s.perm[:m]
}
