package layers_test

import (
	"github.com/privtrain/privtrain/clipping"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFloat32NearCNeverExceedsC (issue 23 item 7): examples whose norm, as the workspace
// computes it, lies at or just below C. Before the fix they passed unclipped (factor 1)
// and their float32 contribution, whose products and sums round, had a true norm up to
// about 1 + 3e-8 times C (the issue measured 1.00000000028·C). Every contribution's norm
// is measured in float64 over the float32 values the workspace produced, and must be ≤ C
// (≤ C_l per layer).
func TestFloat32NearCNeverExceedsC(t *testing.T) {
	const batch = 8
	over, checked := 0, 0
	worst := math.Inf(-1)
	// C at the computed norm itself and a few float32-relative ulps either side.
	rel := []float64{0, 1e-9, -1e-9, 3e-8, -3e-8, 1e-7}
	for trial := range 40 {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		taps := randomTaps[float32](rng, testSpecs, batch)
		w := newWorkspace(t, taps, batch)
		got := make([]float64, w.NumParams())
		// The workspace's own norms: the adversary sets C there.
		stats, err := w.ClippedSum(nil, clipping.Flat{C: 1}, got)
		if err != nil {
			t.Fatal(err)
		}
		norms := append([]float64(nil), stats.Norms...)
		layerNorms := make([][]float64, len(taps))
		for l := range taps {
			layerNorms[l] = append([]float64(nil), stats.LayerNorms[l]...)
		}
		for i := range batch {
			for _, off := range rel {
				c := norms[i] * (1 + off)
				clear(got)
				if _, err := w.ClippedSum(oneRow(batch, i), clipping.Flat{C: c}, got); err != nil {
					t.Fatal(err)
				}
				n := exactNorm(got)
				checked++
				worst = math.Max(worst, n/c-1)
				if n > c {
					over++
					if over <= 5 {
						t.Errorf("trial %d example %d C = norm·(1%+g): contribution %.17g > C = %.17g (relative %.3g)", trial, i, off, n, c, n/c-1)
					}
				}
				perLayer := make([]float64, len(taps))
				for l := range taps {
					perLayer[l] = layerNorms[l][i] * (1 + off)
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
						if over <= 5 {
							t.Errorf("trial %d example %d layer %d: contribution %.17g > C_l = %.17g (relative %.3g)", trial, i, l, n, perLayer[l], n/perLayer[l]-1)
						}
					}
				}
			}
		}
	}
	if over > 0 {
		t.Errorf("%d of %d near-C contributions above their threshold (worst relative %.3g)", over, checked, worst)
	}
	// The margin stays a few float32 ulps: the contributions reach C up to about 1e-6.
	if worst < -1e-6 {
		t.Errorf("near-C contributions all at least %.3g below C: the margin is too large", -worst)
	}
	t.Logf("%d contributions, worst relative excess %.3g", checked, worst)
}
