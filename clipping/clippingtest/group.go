package clippingtest

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/clipping"
)

// groupedClippedSumMatchesReference: with groups of k rows (augmentation multiplicity),
// the clipped sums, norms, plain sum and per-example gradients are those of the groups'
// mean gradients, in the reference layout and, when the kind reads one, the native one.
func groupedClippedSumMatchesReference(t *testing.T, kinds Kinds) {
	const examples = 6
	real := []bool{true, false, true, true, false, true}
	layouts := []string{"reference"}
	if kinds.Layouts.any() {
		layouts = append(layouts, "native")
	}
	for _, k := range []int{2, 3} {
		for _, layout := range layouts {
			batch := examples * k
			rng := rand.New(rand.NewPCG(uint64(k), 77))
			ref := RandomLayers[float64](rng, specs, batch)
			taps := ref
			if layout == "native" {
				taps = relayout(rng, ref, batch, kinds.Layouts)
			}
			w := newWorkspace(t, kinds, taps, batch)
			if err := w.SetGroupSize(k); err != nil {
				t.Fatal(err)
			}
			if w.GroupSize() != k {
				t.Fatalf("GroupSize = %d, want %d", w.GroupSize(), k)
			}
			mask := groupMask(k, real)
			for _, tc := range flatAndPerLayer(0.3) {
				want, wantNorms := referenceGroupSum(ref, batch, k, mask, tc.perLayer, tc.flat)
				got, st := clippedSum(t, w, mask, tc.rule, nil)
				what := layout + " " + tc.name
				AssertClose(t, what+" clipped sum", got, want, 1e-10)
				AssertClose(t, what+" norms", st.Norms, wantNorms, 1e-10)
				if len(st.Norms) != examples {
					t.Fatalf("%s: %d norms for %d examples", what, len(st.Norms), examples)
				}
				if tc.perLayer == nil {
					clipped := 0
					for i, n := range wantNorms {
						if real[i] && n > tc.flat {
							clipped++
						}
					}
					if st.Clipped != clipped || clipped == 0 || clipped == 4 {
						t.Fatalf("%s: Clipped = %d, want %d (and a mix of clipped and unclipped examples)", what, st.Clipped, clipped)
					}
				}
			}
			// The plain sum is Σ_i mean_k g: the reference without clipping.
			want, _ := referenceGroupSum(ref, batch, k, mask, nil, math.Inf(1))
			AssertClose(t, layout+" sum", plainSum(t, w, mask, nil), want, 1e-10)
			// PerExample is the group's mean gradient.
			for i := range examples {
				want, _ := referenceGroupSum(ref, batch, k, groupMask(k, oneRow(examples, i)), nil, math.Inf(1))
				AssertClose(t, layout+" per-example", perExample(t, w, i), want, 1e-10)
			}
		}
	}
}

// groupedPaddingContributesNothing: whatever the padding groups' buffers hold (NaN
// included), the result equals that of the real groups alone.
func groupedPaddingContributesNothing(t *testing.T, kinds Kinds) {
	const k, examples = 3, 5
	batch := k * examples
	rng := rand.New(rand.NewPCG(8, 9))
	taps := RandomLayers[float64](rng, specs, batch)
	w := newWorkspace(t, kinds, taps, batch)
	if err := w.SetGroupSize(k); err != nil {
		t.Fatal(err)
	}
	real := []bool{true, false, true, false, true}
	mask := groupMask(k, real)
	want, _ := clippedSum(t, w, mask, clipping.Flat{C: 0.5}, nil)
	for _, tp := range taps {
		per, gz := len(tp.In)/batch, len(tp.GradZ)/batch
		for r, m := range mask {
			if !m {
				for j := r * per; j < (r+1)*per; j++ {
					tp.In[j] = math.NaN()
				}
				for j := r * gz; j < (r+1)*gz; j++ {
					tp.GradZ[j] = math.Inf(1)
				}
			}
		}
	}
	got, st := clippedSum(t, w, mask, clipping.Flat{C: 0.5}, nil)
	if !slices.Equal(got, want) {
		t.Fatal("padding groups changed the clipped sum")
	}
	for i, r := range real {
		if !r && st.Norms[i] != 0 {
			t.Fatalf("padding example %d has norm %v", i, st.Norms[i])
		}
	}
}

// groupedFill: a Filler is called with row ranges that cover the batch once and end on
// group boundaries, and the result equals the pre-filled one for every chunk size.
func groupedFill(t *testing.T, kinds Kinds) {
	const k, examples = 2, 11
	batch := k * examples
	rng := rand.New(rand.NewPCG(10, 11))
	src := RandomLayers[float64](rng, specs, batch)
	dstTaps, copyRows := fillFrom(src, batch)
	pre := newWorkspace(t, kinds, src, batch)
	w := newWorkspace(t, kinds, dstTaps, batch)
	for _, ws := range []*clipping.Workspace[float64]{pre, w} {
		if err := ws.SetGroupSize(k); err != nil {
			t.Fatal(err)
		}
	}
	real := make([]bool, examples)
	for i := range real {
		real[i] = i%3 != 1
	}
	mask := groupMask(k, real)
	for _, chunk := range []int{1, 2, 5, examples} {
		pre.SetChunkRows(chunk)
		w.SetChunkRows(chunk)
		fill, covered := countingFill(copyRows, batch, func(lo, hi int) {
			if lo%k != 0 || hi%k != 0 {
				t.Errorf("fill %d…%d does not end on groups of %d", lo, hi, k)
			}
		})
		want, _ := clippedSum(t, pre, mask, clipping.Flat{C: 0.4}, nil)
		if got, _ := clippedSum(t, w, mask, clipping.Flat{C: 0.4}, fill); !slices.Equal(got, want) {
			t.Fatalf("chunk %d: filled result differs from the pre-filled one", chunk)
		}
		checkCovered(t, covered, "chunk %d", chunk)
	}
}

func groupSizeErrors(t *testing.T, kinds Kinds) {
	const batch = 6
	rng := rand.New(rand.NewPCG(12, 13))
	taps := RandomLayers[float64](rng, specs, batch)
	w := newWorkspace(t, kinds, taps, batch)
	for _, k := range []int{0, -1, 4, 7} {
		if err := w.SetGroupSize(k); !errors.Is(err, clipping.ErrShape) {
			t.Errorf("SetGroupSize(%d) = %v, want ErrShape", k, err)
		}
	}
	if err := w.SetGroupSize(2); err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, w.NumParams())
	mixed := []bool{true, true, true, false, false, false}
	if _, err := w.ClippedSum(mixed, clipping.Flat{C: 1}, dst); !errors.Is(err, clipping.ErrShape) {
		t.Errorf("a group mixing real and padding rows: %v, want ErrShape", err)
	}
	for _, v := range dst {
		if v != 0 {
			t.Fatal("a refused call changed dst")
		}
	}
	if err := w.PerExample(3, dst); !errors.Is(err, clipping.ErrShape) {
		t.Errorf("PerExample(3) with 3 examples: %v, want ErrShape", err)
	}
	// Back to one row per example: the ungrouped result, bit for bit.
	if err := w.SetGroupSize(1); err != nil {
		t.Fatal(err)
	}
	want, _ := clippedSum(t, newWorkspace(t, kinds, taps, batch), nil, clipping.Flat{C: 0.3}, nil)
	if got, _ := clippedSum(t, w, nil, clipping.Flat{C: 0.3}, nil); !slices.Equal(got, want) {
		t.Fatal("group size 1 after 2 differs from a fresh workspace")
	}
}

// groupedFloat32ClippedNormAtMostC: in float32, one real group's clipped contribution
// (computed exactly from the float32 values) never exceeds C.
func groupedFloat32ClippedNormAtMostC(t *testing.T, kinds Kinds) {
	const k, examples = 3, 4
	batch := k * examples
	for trial := range 10 {
		rng := rand.New(rand.NewPCG(uint64(trial), 14))
		taps := RandomLayers[float32](rng, specs, batch)
		w := newWorkspace(t, kinds, taps, batch)
		if err := w.SetGroupSize(k); err != nil {
			t.Fatal(err)
		}
		const c = 0.05
		for i := range examples {
			got, st := clippedSum(t, w, groupMask(k, oneRow(examples, i)), clipping.Flat{C: c}, nil)
			if st.Norms[i] > c {
				if n := exactNorm(got); n > c {
					t.Fatalf("trial %d example %d: clipped norm %v > C = %v", trial, i, n, c)
				}
			}
		}
	}
}
