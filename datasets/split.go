package datasets

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/privtrain/privtrain/internal/privrand"
)

// StratifiedSplit splits the indices 0…len(labels)-1 into rest and picked, with
// len(picked) == n, deterministically and stratified by label.
//
// The rule, in two steps:
//
//  1. Class sizes: class c with m_c of the N examples gets n·m_c/N picks rounded down;
//     the picks still missing go, one each, to the classes with the largest remainders
//     n·m_c mod N, ties to the smaller label (Hamilton's largest-remainder method). So
//     every class's share differs from n·m_c/N by less than one.
//  2. Which examples: of the m_c examples of class c, in index order, the k-th
//     (k = 0, 1, …) is picked when ⌊(k+1)·t_c/m_c⌋ > ⌊k·t_c/m_c⌋, t_c being the class's
//     picks; this spreads the picks evenly, e.g. every 5th example when t_c = m_c/5.
//
// Both slices are in increasing index order. Labels must be non-negative.
func StratifiedSplit(labels []int, n int) (rest, picked []int, err error) {
	total := len(labels)
	if n < 0 || n > total {
		return nil, nil, fmt.Errorf("datasets: cannot pick %d of %d examples", n, total)
	}
	var members [][]int // members[c]: indices of class c in increasing order
	for i, l := range labels {
		if l < 0 {
			return nil, nil, fmt.Errorf("datasets: example %d has negative label %d", i, l)
		}
		for l >= len(members) {
			members = append(members, nil)
		}
		members[l] = append(members[l], i)
	}

	quota := make([]int, len(members))
	remainder := make([]int, len(members))
	missing := n
	for c, m := range members {
		quota[c] = n * len(m) / total
		remainder[c] = n * len(m) % total
		missing -= quota[c]
	}
	order := make([]int, len(members))
	for c := range order {
		order[c] = c
	}
	sort.SliceStable(order, func(a, b int) bool { return remainder[order[a]] > remainder[order[b]] })
	for _, c := range order[:missing] {
		quota[c]++
	}

	isPicked := make([]bool, total)
	for c, m := range members {
		t, size := quota[c], len(m)
		for k, i := range m {
			if (k+1)*t/size > k*t/size {
				isPicked[i] = true
			}
		}
	}
	rest = make([]int, 0, total-n)
	picked = make([]int, 0, n)
	for i, p := range isPicked {
		if p {
			picked = append(picked, i)
		} else {
			rest = append(rest, i)
		}
	}
	return rest, picked, nil
}

// RandomStratifiedSplit is StratifiedSplit with the examples of each class picked at
// random instead of evenly spaced: the indices are permuted by a ChaCha8 stream seeded
// with seed (privrand.ValidationSplit), StratifiedSplit runs on the permuted order, and the result is mapped back.
// So every class's share of picked is what StratifiedSplit gives (within one of
// n·m_c/N), which examples are picked depends on seed, and the same labels and seed
// always give the same split. Both slices are in increasing index order.
func RandomStratifiedSplit(labels []int, n int, seed uint64) (rest, picked []int, err error) {
	perm := seedPermutation(len(labels), seed)
	permuted := make([]int, len(labels))
	for k, i := range perm {
		permuted[k] = labels[i]
	}
	restK, pickedK, err := StratifiedSplit(permuted, n)
	if err != nil {
		return nil, nil, err
	}
	back := func(ks []int) []int {
		out := make([]int, len(ks))
		for j, k := range ks {
			out[j] = perm[k]
		}
		slices.Sort(out)
		return out
	}
	return back(restK), back(pickedK), nil
}

// seedPermutation is a permutation of 0…n−1 drawn by a Fisher–Yates shuffle from
// privrand's ValidationSplit stream of seed.
func seedPermutation(n int, seed uint64) []int {
	rng := privrand.NewSeeded(seed, privrand.ValidationSplit).Rand()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	return perm
}

// HoldOut splits ds into a training and a test set: the test set gets
// round(fraction·Len) examples chosen by RandomStratifiedSplit with seed, the training
// set the rest, both in ds's order. fraction must leave both sets non-empty.
//
// The split depends on the labels, their order and the seed only. It is not
// neighbour-stable: one permutation of the whole set picks the test examples, so adding
// or removing one example of ds changes hundreds of the others' sides (about 700 of the
// 800 held out of the 8,000 embedded MNIST examples), and differential privacy of a run
// on the training set holds per training set, not per ds. New runs split with
// HashHoldOut, which is stable; HoldOut remains to rebuild the splits of checkpoints
// written before it. The test set's metrics are computed without noise: publishing them
// reveals something about the test examples.
func HoldOut(ds Dataset, fraction float64, seed uint64) (train, test Dataset, err error) {
	if !(fraction > 0 && fraction < 1) {
		return nil, nil, fmt.Errorf("datasets: test fraction %v: want a value in (0, 1)", fraction)
	}
	n := int(math.Round(fraction * float64(ds.Len())))
	if n < 1 || n >= ds.Len() {
		return nil, nil, fmt.Errorf("datasets: test fraction %v of %d examples leaves %d for test and %d for training; both must be ≥ 1", fraction, ds.Len(), n, ds.Len()-n)
	}
	rest, picked, err := RandomStratifiedSplit(Labels(ds), n, seed)
	if err != nil {
		return nil, nil, err
	}
	if train, err = Subset(ds, rest); err != nil {
		return nil, nil, err
	}
	if test, err = Subset(ds, picked); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}
