package erm

import (
	"math"
	"slices"
	"testing"
)

// TestSCDProgress: Progress sees epochs 1 … E in order, once each, at the rounds where
// e·N/L updates are done (counted here from the rounds the run makes), its last model is
// the released one, and watching does not change the run (same seed, same release).
func TestSCDProgress(t *testing.T) {
	p := normalizedProblem(t, Squared{}, 50, 4, 0.1, 7)
	const epochs, batch = 4, 7 // T = ⌊4·50/7⌋ = 28 rounds, 7 a epoch: not a divisor of 50
	solvers := map[string]func(progress func(int, []float64)) Solver{
		"dp-scd": func(pr func(int, []float64)) Solver {
			return &SCD{Epsilon: 1, Delta: 1e-3, Epochs: epochs, BatchSize: batch, Clip: 0.5, Progress: pr}
		},
		"dp-sgd": func(pr func(int, []float64)) Solver {
			return &SCDBaselineSGD{Epsilon: 1, Delta: 1e-3, Epochs: epochs, BatchSize: batch, Clip: 0.5, Step: 0.3, Progress: pr}
		},
	}
	for name, mk := range solvers {
		t.Run(name, func(t *testing.T) {
			plain, err := mk(nil).Solve(p, NewNoise(5))
			if err != nil {
				t.Fatal(err)
			}
			var seen []int
			var last []float64
			watched, err := mk(func(e int, x []float64) {
				seen = append(seen, e)
				last = x
			}).Solve(p, NewNoise(5))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seen, []int{1, 2, 3, 4}) {
				t.Fatalf("epochs seen %v, want [1 2 3 4]", seen)
			}
			if watched.Iterations != 4*50/7 {
				t.Fatalf("rounds %d, want ⌊4·50/7⌋ = 28", watched.Iterations)
			}
			if !slices.Equal(plain.X, watched.X) {
				t.Fatalf("watching changed the release: %v vs %v", plain.X, watched.X)
			}
			for j := range last {
				if math.Abs(last[j]-watched.X[j]) > 1e-15*math.Max(1, math.Abs(watched.X[j])) {
					t.Fatalf("last epoch's model %v, released %v", last, watched.X)
				}
			}
		})
	}
}

// TestEpochMarks: the epoch ends fall after ⌈e·T/E⌉ rounds, worked out by hand.
func TestEpochMarks(t *testing.T) {
	for _, tc := range []struct {
		epochs, rounds int
		want           []int // the round (from 1) after which each epoch ends
	}{
		{4, 28, []int{7, 14, 21, 28}},
		{3, 10, []int{4, 7, 10}},     // ⌈10/3⌉ = 4, ⌈20/3⌉ = 7
		{5, 1, []int{1, 1, 1, 1, 1}}, // T = max(1, …): every epoch ends with the one round
	} {
		var got []int
		r := 0
		m := newEpochMarks(scdConfig{epochs: tc.epochs, rounds: tc.rounds}, func(int, []float64) { got = append(got, r+1) })
		for r = range tc.rounds {
			m.done(r, func() []float64 { return nil })
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("E = %d, T = %d: epochs end after rounds %v, want %v", tc.epochs, tc.rounds, got, tc.want)
		}
	}
}
