package clippingtest

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// fillFrom returns layers like src with zeroed buffers, and the function that copies
// src's rows lo…hi−1 into them (what a Filler does).
func fillFrom[T num.Float](src []Layer[T], batch int) ([]Layer[T], func(lo, hi int)) {
	dst := make([]Layer[T], len(src))
	for l, tp := range src {
		dst[l] = tp
		dst[l].In = make([]T, len(tp.In))
		dst[l].GradZ = make([]T, len(tp.GradZ))
	}
	return dst, func(lo, hi int) {
		for l, tp := range src {
			in, gz := len(tp.In)/batch, len(tp.GradZ)/batch
			copy(dst[l].In[lo*in:hi*in], tp.In[lo*in:hi*in])
			copy(dst[l].GradZ[lo*gz:hi*gz], tp.GradZ[lo*gz:hi*gz])
		}
	}
}

// countingFill is a Filler that calls check (when not nil) and copyRows on each range and
// counts in covered how often each row of the batch was filled.
func countingFill(copyRows func(lo, hi int), batch int, check func(lo, hi int)) (clipping.Filler, []int) {
	var mu sync.Mutex
	covered := make([]int, batch)
	return func(_, lo, hi int) error {
		if check != nil {
			check(lo, hi)
		}
		mu.Lock()
		for i := lo; i < hi; i++ {
			covered[i]++
		}
		mu.Unlock()
		copyRows(lo, hi)
		return nil
	}, covered
}

// checkCovered fails t unless every row was filled exactly once; format and args say
// which call filled them.
func checkCovered(t *testing.T, covered []int, format string, args ...any) {
	t.Helper()
	for i, c := range covered {
		if c != 1 {
			t.Fatalf(format+": row %d filled %d times", append(args, i, c)...)
		}
	}
}

// fillCoversBatchAndMatchesPrefilled hands the layers to the workspace through a Filler
// that copies rows from a source, and checks that the fill ranges are disjoint, cover the
// batch, and that the result equals that of pre-filled layers.
func fillCoversBatchAndMatchesPrefilled(t *testing.T, k Kinds) {
	const batch = 23
	rng := rand.New(rand.NewPCG(23, 24))
	src := RandomLayers[float32](rng, specs, batch)
	dstTaps, copyRows := fillFrom(src, batch)
	pre := newWorkspace(t, k, src, batch)
	w := newWorkspace(t, k, dstTaps, batch)
	masks := [][]bool{nil, make([]bool, batch), make([]bool, batch)}
	for i := range batch {
		masks[1][i] = i%3 != 1
		masks[2][i] = i == 4 || i == 20
	}
	for _, mask := range masks {
		for _, chunk := range []int{1, 3, 7, batch} {
			pre.SetChunkRows(chunk)
			w.SetChunkRows(chunk)
			for l := range dstTaps {
				clear(dstTaps[l].In)
				clear(dstTaps[l].GradZ)
			}
			fill, covered := countingFill(copyRows, batch, nil)
			want, wantSt := clippedSum(t, pre, mask, clipping.Flat{C: 0.4}, nil)
			got, st := clippedSum(t, w, mask, clipping.Flat{C: 0.4}, fill)
			if !slices.Equal(got, want) || !slices.Equal(st.Norms, wantSt.Norms) || st.Clipped != wantSt.Clipped {
				t.Fatalf("chunk %d: filled result differs from the pre-filled one", chunk)
			}
			checkCovered(t, covered, "chunk %d mask %v", chunk, mask)
			clear(covered)
			if !slices.Equal(plainSum(t, w, mask, fill), plainSum(t, pre, mask, nil)) {
				t.Fatalf("chunk %d: filled sum differs from the pre-filled one", chunk)
			}
		}
	}
}

func fillErrorLeavesDstUntouched(t *testing.T, k Kinds) {
	const batch = 8
	rng := rand.New(rand.NewPCG(25, 26))
	w := newWorkspace(t, k, RandomLayers[float64](rng, specs, batch), batch)
	w.SetChunkRows(2)
	boom := errors.New("boom")
	dst := make([]float64, w.NumParams())
	_, err := w.ClippedSumFill(nil, clipping.Flat{C: 1}, dst, func(_, lo, _ int) error {
		if lo >= 4 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want the fill's", err)
	}
	for _, v := range dst {
		if v != 0 {
			t.Fatal("dst written after a fill error")
		}
	}
}

// reproducibleAcrossCores checks that the result does not depend on how many cores share
// the work: the partition into chunks and groups depends only on the rows.
func reproducibleAcrossCores(t *testing.T, k Kinds) {
	const batch = 64
	rng := rand.New(rand.NewPCG(27, 28))
	w := newWorkspace(t, k, RandomLayers[float32](rng, specs, batch), batch)
	w.SetChunkRows(2)
	var results [][]float64
	for _, procs := range []int{1, 2, 5} {
		old := runtime.GOMAXPROCS(procs)
		for range 3 {
			got := make([]float64, w.NumParams())
			if _, err := w.ClippedSum(nil, clipping.Flat{C: 0.1}, got); err != nil {
				t.Fatal(err)
			}
			results = append(results, got)
		}
		runtime.GOMAXPROCS(old)
	}
	for _, r := range results[1:] {
		if !slices.Equal(r, results[0]) {
			t.Fatal("results differ between runs or core counts")
		}
	}
}

// nativeLayoutMatchesReference stores the layers in the layouts the kind reads (relayout)
// and checks per-example gradients, norms, flat and per-layer clipped sums and plain sums
// against the reference-layout brute force, for several chunk sizes.
func nativeLayoutMatchesReference(t *testing.T, k Kinds) {
	const batch = 9
	rng := rand.New(rand.NewPCG(21, 22))
	taps := RandomLayers[float64](rng, specs, batch)
	native := relayout(rng, taps, batch, k.Layouts)
	w := newWorkspace(t, k, native, batch)
	CheckPerExample(t, w, taps, 1e-13)
	mask := []bool{true, true, false, true, false, true, true, true, false}
	for _, chunk := range []int{1, 2, 4, batch} {
		w.SetChunkRows(chunk)
		want, wantNorms := ReferenceClippedSum(taps, batch, mask, nil, 0.7)
		got, st := clippedSum(t, w, mask, clipping.Flat{C: 0.7}, nil)
		AssertClose(t, "clipped sum", got, want, 1e-13)
		AssertClose(t, "norms", st.Norms, wantNorms, 1e-13)
		perLayer := []float64{0.3, 0.2, 1, 0.05}
		want, _ = ReferenceClippedSum(taps, batch, mask, perLayer, 0)
		got, _ = clippedSum(t, w, mask, clipping.PerLayer{C: perLayer}, nil)
		AssertClose(t, "per-layer clipped sum", got, want, 1e-13)
		want, _ = ReferenceClippedSum(taps, batch, mask, nil, 1e300)
		AssertClose(t, "sum", plainSum(t, w, mask, nil), want, 1e-13)
	}
}

// patchesStandInForIn gives the conv layers no In but a Patches function, answering from
// the original In for a worker ≥ 0 (a cache) and by copying into buf for −1, and checks
// the results are bit-for-bit those of the layers with In.
func patchesStandInForIn(t *testing.T, k Kinds) {
	const batch = 8
	rng := rand.New(rand.NewPCG(29, 30))
	taps := relayout(rng, RandomLayers[float32](rng, specs, batch), batch, k.Layouts)
	lazy := make([]Layer[float32], len(taps))
	calls := 0
	var mu sync.Mutex
	for l, tp := range taps {
		lazy[l] = tp
		if tp.Kind != Conv {
			continue
		}
		n := tp.Positions * tp.InDim
		in := tp.In
		lazy[l].In = nil
		lazy[l].Patches = func(worker, i int, buf []float32) []float32 {
			mu.Lock()
			calls++
			mu.Unlock()
			if worker >= 0 {
				return in[i*n : (i+1)*n]
			}
			copy(buf, in[i*n:(i+1)*n])
			return buf[:n]
		}
	}
	a, b := newWorkspace(t, k, taps, batch), newWorkspace(t, k, lazy, batch)
	a.SetChunkRows(3)
	b.SetChunkRows(3)
	mask := []bool{true, false, true, true, true, true, false, true}
	noop := func(int, int, int) error { return nil }
	for _, fill := range []clipping.Filler{nil, noop} {
		want, _ := clippedSum(t, a, mask, clipping.Flat{C: 0.3}, nil)
		if got, _ := clippedSum(t, b, mask, clipping.Flat{C: 0.3}, fill); !slices.Equal(got, want) {
			t.Fatal("clipped sums differ")
		}
		if !slices.Equal(plainSum(t, b, mask, fill), plainSum(t, a, mask, nil)) {
			t.Fatal("sums differ")
		}
	}
	for i := range batch {
		if !slices.Equal(perExample(t, b, i), perExample(t, a, i)) {
			t.Fatalf("example %d differs", i)
		}
	}
	if calls == 0 {
		t.Fatal("Patches never called")
	}
}

// badInOrder: an InOrder that is not a permutation of 0…InDim−1 is refused, for dense
// and conv layers.
func badInOrder(t *testing.T, k Kinds) {
	for _, tap := range []Layer[float64]{
		{Kind: Dense, InDim: 3, OutDim: 1, In: make([]float64, 3), GradZ: make([]float64, 1)},
		{Kind: Conv, InDim: 3, OutDim: 1, Positions: 2, In: make([]float64, 6), GradZ: make([]float64, 2)},
	} {
		for _, order := range [][]int{{0, 1}, {0, 1, 1}, {0, 1, 3}, {-1, 0, 1}} {
			tap.InOrder = order
			if _, err := clipping.NewWorkspace(Gradients(k, []Layer[float64]{tap}), 1); !errors.Is(err, clipping.ErrShape) {
				t.Errorf("kind %d, InOrder %v: error %v, want ErrShape", tap.Kind, order, err)
			}
		}
	}
}
