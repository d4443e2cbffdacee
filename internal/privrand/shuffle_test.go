package privrand

import (
	"math"
	"slices"
	"testing"
)

func TestShuffleEpochs(t *testing.T) {
	const n, batch = 103, 10
	s, err := NewShuffle(n, batch)
	if err != nil {
		t.Fatal(err)
	}
	if s.StepsPerEpoch() != 11 {
		t.Fatalf("StepsPerEpoch() = %d, want ⌈103/10⌉ = 11", s.StepsPerEpoch())
	}
	r := NewSeeded(1, Sampler).Rand()
	var epochs [][]int
	for range 3 {
		perm := s.Perm(r)
		var seen []int
		for k := range s.StepsPerEpoch() {
			idx := s.Batch(perm, k)
			if want := min(batch, n-k*batch); len(idx) != want {
				t.Fatalf("batch %d has %d examples, want %d", k, len(idx), want)
			}
			seen = append(seen, idx...)
		}
		if len(s.Batch(perm, s.StepsPerEpoch())) != 0 {
			t.Error("a batch past the epoch is not empty")
		}
		if err := CheckPerm(seen, n); err != nil {
			t.Fatalf("an epoch did not visit every example once: %v", err)
		}
		epochs = append(epochs, seen)
	}
	if slices.Equal(epochs[0], epochs[1]) {
		t.Error("two epochs in the same order")
	}
	for _, c := range [][2]int{{0, 1}, {10, 0}, {10, 11}} {
		if _, err := NewShuffle(c[0], c[1]); err == nil {
			t.Errorf("NewShuffle(%d, %d) succeeded", c[0], c[1])
		}
	}
}

// TestShuffleUniform: each of the 4! = 24 permutations of 4 examples is drawn with
// probability 1/24 (χ² over 24,000 epochs, 23 degrees of freedom).
func TestShuffleUniform(t *testing.T) {
	const epochs = 24000
	s, _ := NewShuffle(4, 2)
	r := NewSeeded(2, Sampler).Rand()
	freq := map[[4]int]int{}
	for range epochs {
		freq[[4]int(s.Perm(r))]++
	}
	if len(freq) != 24 {
		t.Fatalf("%d distinct permutations of 4, want 24", len(freq))
	}
	chi, e := 0.0, epochs/24.0
	for _, f := range freq {
		chi += (float64(f) - e) * (float64(f) - e) / e
	}
	if chi > chiSquareBound(23) {
		t.Errorf("χ² = %.1f over the 24 permutations, above %.1f", chi, chiSquareBound(23))
	}
}

func TestCheckPerm(t *testing.T) {
	if err := CheckPerm([]int{2, 0, 1}, 3); err != nil {
		t.Error(err)
	}
	for _, p := range [][]int{{0, 1}, {0, 1, 1}, {0, 1, 3}, {0, 1, -1}} {
		if CheckPerm(p, 3) == nil {
			t.Errorf("CheckPerm(%v, 3) accepted", p)
		}
	}
}

// TestSubset: m distinct indices per draw, each index included with probability m/n
// (Binomial counts within six standard deviations), every pair with m(m−1)/(n(n−1)).
func TestSubset(t *testing.T) {
	const n, m, draws = 20, 5, 20000
	s := NewSubset(n)
	r := NewSeeded(4, ERM).Rand()
	counts := make([]int, n)
	pair := 0 // draws holding both 0 and n−1
	for range draws {
		idx := s.Sample(r, m)
		seen := map[int]bool{}
		for _, i := range idx {
			if seen[i] || i < 0 || i >= n {
				t.Fatalf("draw %v repeats or leaves [0, n)", idx)
			}
			seen[i] = true
			counts[i]++
		}
		if seen[0] && seen[n-1] {
			pair++
		}
	}
	p := float64(m) / n
	for i, c := range counts {
		if sd := math.Sqrt(draws * p * (1 - p)); math.Abs(float64(c)-draws*p) > 6*sd {
			t.Errorf("index %d drawn %d times, want %v ± %.0f", i, c, draws*p, 6*sd)
		}
	}
	pp := float64(m*(m-1)) / (n * (n - 1))
	if sd := math.Sqrt(draws * pp * (1 - pp)); math.Abs(float64(pair)-draws*pp) > 6*sd {
		t.Errorf("pair drawn together %d times, want %v ± %.0f", pair, draws*pp, 6*sd)
	}
}
