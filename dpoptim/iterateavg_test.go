package dpoptim_test

import (
	"errors"
	"math"
	"testing"

	"github.com/privtrain/privtrain/dpoptim"
)

// harmonic is H_T = Σ_{k=1}^{T} 1/k.
func harmonic(T int) float64 {
	h := 0.0
	for k := 1; k <= T; k++ {
		h += 1 / float64(k)
	}
	return h
}

// The iterates θ_k = k·v (k = 0 … T) have closed-form averages over θ_0 … θ_{T−1}:
// uniform (Theorem 3) (T−1)/2·v; weighted by η_k = 1/(k+1) (Theorem 2 with a 1/t step)
// Σ_k k/(k+1) / Σ_k 1/(k+1) · v = (T − H_T)/H_T · v. The last iterate θ_T = T·v is not in
// either.
func TestIterateAverageClosedForm(t *testing.T) {
	v := []float64{1, -2, 0.5}
	for _, T := range []int{1, 2, 7, 100} {
		for _, tc := range []struct {
			name    string
			weights dpoptim.Schedule
			want    float64
		}{
			{"uniform", nil, float64(T-1) / 2},
			{"step-weighted", oneOverKPlus1{}, (float64(T) - harmonic(T)) / harmonic(T)},
		} {
			a := &dpoptim.IterateAverage{Weights: tc.weights}
			theta := func(k int) []float64 {
				x := make([]float64, len(v))
				for i := range v {
					x[i] = float64(k) * v[i]
				}
				return x
			}
			if err := a.Init(theta(0)); err != nil {
				t.Fatal(err)
			}
			for k := 1; k <= T; k++ {
				if err := a.Update(theta(k)); err != nil {
					t.Fatal(err)
				}
			}
			got := make([]float64, len(v))
			if err := a.Average(got); err != nil {
				t.Fatal(err)
			}
			for i := range v {
				if want := tc.want * v[i]; math.Abs(got[i]-want) > 1e-12*(1+math.Abs(want)) {
					t.Errorf("%s T=%d: average[%d] = %v, closed form %v", tc.name, T, i, got[i], want)
				}
			}
			if a.Steps() != T {
				t.Errorf("%s: Steps() = %d, want %d", tc.name, a.Steps(), T)
			}
		}
	}
}

// oneOverKPlus1 is η_k = 1/(k+1), written out here rather than taken from a schedule of
// the package.
type oneOverKPlus1 struct{}

func (oneOverKPlus1) Rate(k int) float64 { return 1 / float64(k+1) }

// Before any step the average is θ₀; weights of 0 leave the iterates they belong to out.
func TestIterateAverageStartAndZeroWeights(t *testing.T) {
	a := &dpoptim.IterateAverage{Weights: zeroThen{n: 2}}
	if a.Started() {
		t.Fatal("started before Init")
	}
	got := make([]float64, 1)
	if err := a.Average(got); !errors.Is(err, dpoptim.ErrConfig) {
		t.Fatalf("Average before Init: %v, want ErrConfig", err)
	}
	if err := a.Update([]float64{1}); !errors.Is(err, dpoptim.ErrConfig) {
		t.Fatalf("Update before Init: %v, want ErrConfig", err)
	}
	_ = a.Init([]float64{5})
	if err := a.Average(got); err != nil || got[0] != 5 {
		t.Fatalf("average before any step = %v (%v), want θ₀ = 5", got[0], err)
	}
	// θ_0 = 5, θ_1 = 7 carry weight 0; θ_2 = 10, θ_3 = 20 weight 1: after T = 4 steps the
	// average is (10 + 20)/2 = 15 (θ_4 = 100 is the newest, not in it).
	for _, x := range []float64{7, 10, 20, 100} {
		if err := a.Update([]float64{x}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Average(got); err != nil || got[0] != 15 {
		t.Fatalf("average = %v (%v), want 15", got[0], err)
	}
}

// zeroThen weights the first n iterates 0 and the others 1.
type zeroThen struct{ n int }

func (z zeroThen) Rate(k int) float64 {
	if k < z.n {
		return 0
	}
	return 1
}

// badRate returns one fixed rate.
type badRate float64

func (b badRate) Rate(int) float64 { return float64(b) }

func TestIterateAverageRejects(t *testing.T) {
	a := &dpoptim.IterateAverage{}
	if err := a.Init([]float64{1, math.NaN()}); !errors.Is(err, dpoptim.ErrNonFinite) {
		t.Errorf("Init with NaN: %v, want ErrNonFinite", err)
	}
	_ = a.Init([]float64{1, 2})
	if err := a.Update([]float64{1}); !errors.Is(err, dpoptim.ErrLength) {
		t.Errorf("Update of the wrong length: %v, want ErrLength", err)
	}
	if err := a.Update([]float64{1, math.Inf(1)}); !errors.Is(err, dpoptim.ErrNonFinite) {
		t.Errorf("Update with Inf: %v, want ErrNonFinite", err)
	}
	if err := a.Average(make([]float64, 3)); !errors.Is(err, dpoptim.ErrLength) {
		t.Errorf("Average into the wrong length: %v, want ErrLength", err)
	}
	if a.Steps() != 0 {
		t.Errorf("a rejected Update counted: Steps() = %d", a.Steps())
	}
	for _, r := range []float64{-1, math.NaN(), math.Inf(1)} {
		b := &dpoptim.IterateAverage{Weights: badRate(r)}
		_ = b.Init([]float64{1})
		if err := b.Update([]float64{2}); !errors.Is(err, dpoptim.ErrConfig) {
			t.Errorf("weight %v: %v, want ErrConfig", r, err)
		}
	}
}
