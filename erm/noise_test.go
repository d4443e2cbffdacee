package erm

import (
	"math"
	"testing"
)

// TestLaplaceScale checks the sampler's scale statistically: Laplace(b) has
// E|X| = b and Var X = 2b². The authors' MATLAB sampler (b read as the
// standard deviation) would give E|X| = b/√2 ≈ 0.707b, far outside the
// bounds (the standard error of the mean of |X| over 4e5 draws is b/632).
func TestLaplaceScale(t *testing.T) {
	rng := NewNoise(1)
	const b, n = 0.4, 400000
	var sumAbs, sum, sumSq float64
	for range n {
		x := laplace(rng, b)
		sumAbs += math.Abs(x)
		sum += x
		sumSq += x * x
	}
	meanAbs := sumAbs / n
	mean := sum / n
	variance := sumSq/n - mean*mean
	if math.Abs(meanAbs-b) > 0.01*b {
		t.Errorf("E|X| = %v, want b = %v", meanAbs, b)
	}
	if math.Abs(variance-2*b*b) > 0.03*2*b*b {
		t.Errorf("Var X = %v, want 2b² = %v", variance, 2*b*b)
	}
	if math.Abs(mean) > 0.01 {
		t.Errorf("E X = %v, want 0", mean)
	}
}

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
