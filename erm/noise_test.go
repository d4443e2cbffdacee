package erm

import (
	"math"
	"testing"
)

func TestSamplerDistinct(t *testing.T) {
	s := newSampler(50)
	rng := NewNoise(2)
	counts := make([]int, 50)
	for range 2000 {
		seen := map[int]bool{}
		for _, i := range s.sample(rng, 10) {
			if seen[i] {
				t.Fatal("index drawn twice in one batch")
			}
			seen[i] = true
			counts[i]++
		}
	}
	// Each index is in a batch with probability 1/5: 400 ± 18 (sd), so
	// [300, 500] is > 5 sd wide on each side.
	for i, c := range counts {
		if c < 300 || c > 500 {
			t.Errorf("index %d drawn %d times, want about 400", i, c)
		}
	}
}

// TestPoissonSample checks the geometric-skip sampler against the Bernoulli
// definition: each index kept with probability q independently, so the
// batch size is Binomial(n, q) and every index has the same frequency.
func TestPoissonSample(t *testing.T) {
	rng := NewNoise(3)
	const n, q, rounds = 200, 0.05, 20000
	counts := make([]int, n)
	var sizes, sizesSq float64
	var buf []int
	for range rounds {
		buf = poissonSample(rng, n, q, buf)
		prev := -1
		for _, i := range buf {
			if i <= prev || i >= n {
				t.Fatalf("indices not increasing in [0, n): %v", buf)
			}
			prev = i
			counts[i]++
		}
		s := float64(len(buf))
		sizes += s
		sizesSq += s * s
	}
	mean := sizes / rounds
	variance := sizesSq/rounds - mean*mean
	// Binomial(200, 0.05): mean 10, variance 9.5; standard errors 0.022 and ~0.1.
	if math.Abs(mean-10) > 0.15 || math.Abs(variance-9.5) > 0.6 {
		t.Errorf("batch size mean %v, variance %v; want 10, 9.5", mean, variance)
	}
	// Each index: Binomial(20000, 0.05), mean 1000, sd 31.
	for i, c := range counts {
		if c < 850 || c > 1150 {
			t.Errorf("index %d kept %d times, want about 1000", i, c)
		}
	}
	if got := poissonSample(rng, 5, 1, nil); len(got) != 5 {
		t.Errorf("q = 1 kept %v", got)
	}
}
