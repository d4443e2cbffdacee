package datasets

import (
	"fmt"
	"sort"
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
