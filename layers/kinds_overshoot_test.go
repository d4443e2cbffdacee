package layers_test

import (
	"github.com/privtrain/privtrain/clipping"
	"math"
	"math/rand/v2"
	"testing"
)

// exactNorm is the L2 norm of x with a scaled, compensated sum: accurate to about one
// ulp of float64 — far below the float32 rounding this file is about.
func exactNorm(x []float64) float64 {
	var m float64
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	if m == 0 {
		return 0
	}
	var s, c float64 // Kahan
	for _, v := range x {
		y := (v/m)*(v/m) - c
		t := s + y
		c = (t - s) - y
		s = t
	}
	return m * math.Sqrt(s)
}

// TestFloat32ClippedNormNeverExceedsC is the property the noise calibration relies on: a
// float32 example's clipped contribution has norm ≤ C, not ≤ C·(1+1e-7). The inputs are
// 1e6 times the usual scale, so that every example is clipped by a tiny factor and every
// rounding of the factor and of the products counts; the norms are computed in float64
// over the float32 values the workspace produced.
func TestFloat32ClippedNormNeverExceedsC(t *testing.T) {
	const batch = 8
	over, checked := 0, 0
	worst := 0.0
	for trial := range 60 {
		rng := rand.New(rand.NewPCG(uint64(trial), 1e6))
		taps := randomTaps[float32](rng, testSpecs, batch)
		for l := range taps {
			for j := range taps[l].GradZ {
				taps[l].GradZ[j] *= 1e6
			}
		}
		w := newWorkspace(t, taps, batch)
		got := make([]float64, w.NumParams())
		c := 0.05 + rng.Float64()
		perLayer := make([]float64, len(taps))
		for l := range perLayer {
			perLayer[l] = 0.01 + rng.Float64()
		}
		for i := range batch {
			clear(got)
			if _, err := w.ClippedSum(oneRow(batch, i), clipping.Flat{C: c}, got); err != nil {
				t.Fatal(err)
			}
			n := exactNorm(got)
			checked++
			worst = math.Max(worst, n/c-1)
			if n > c {
				over++
				t.Errorf("trial %d example %d: flat clipped norm %.17g > C = %.17g (relative %.3g)", trial, i, n, c, n/c-1)
			}
			clear(got)
			if _, err := w.ClippedSum(oneRow(batch, i), clipping.PerLayer{C: perLayer}, got); err != nil {
				t.Fatal(err)
			}
			for l := range taps {
				part := got[offsets(taps)[l] : offsets(taps)[l]+taps[l].NumParams()]
				n := exactNorm(part)
				checked++
				worst = math.Max(worst, n/perLayer[l]-1)
				if n > perLayer[l] {
					over++
					t.Errorf("trial %d example %d layer %d: clipped norm %.17g > C_l = %.17g", trial, i, l, n, perLayer[l])
				}
			}
		}
		if over > 10 {
			t.Fatalf("%d of %d clipped norms above their threshold", over, checked)
		}
	}
	// The margin must stay tiny: the clipped norm is C up to a few float32 ulps.
	if worst < -1e-6 {
		t.Errorf("clipped norms all at least %.3g below C: the margin is too large", -worst)
	}
}
