package clipping

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestFillCoversBatchAndMatchesPrefilled hands the taps to the workspace through a Filler
// that copies rows from a source, and checks that the fill ranges are disjoint, cover the
// batch, and that the result equals that of pre-filled taps.
func TestFillCoversBatchAndMatchesPrefilled(t *testing.T) {
	const batch = 23
	rng := rand.New(rand.NewPCG(23, 24))
	src := randomTaps[float32](rng, testSpecs, batch)
	dstTaps := make([]Tap[float32], len(src))
	for l, tp := range src {
		dstTaps[l] = tp
		dstTaps[l].In = make([]float32, len(tp.In))
		dstTaps[l].GradZ = make([]float32, len(tp.GradZ))
	}
	pre := newWorkspace(t, src, batch)
	w := newWorkspace(t, dstTaps, batch)
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
			var mu sync.Mutex
			covered := make([]int, batch)
			fill := func(_, lo, hi int) error {
				mu.Lock()
				for i := lo; i < hi; i++ {
					covered[i]++
				}
				mu.Unlock()
				for l, tp := range src {
					in, gz := len(tp.In)/batch, len(tp.GradZ)/batch
					copy(dstTaps[l].In[lo*in:hi*in], tp.In[lo*in:hi*in])
					copy(dstTaps[l].GradZ[lo*gz:hi*gz], tp.GradZ[lo*gz:hi*gz])
				}
				return nil
			}
			want := make([]float64, w.NumParams())
			got := make([]float64, w.NumParams())
			wantSt, err := pre.ClippedSum(mask, Flat{C: 0.4}, want)
			if err != nil {
				t.Fatal(err)
			}
			st, err := w.ClippedSumFill(mask, Flat{C: 0.4}, got, fill)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || !slices.Equal(st.Norms, wantSt.Norms) || st.Clipped != wantSt.Clipped {
				t.Fatalf("chunk %d: filled result differs from the pre-filled one", chunk)
			}
			for i, c := range covered {
				if c != 1 {
					t.Fatalf("chunk %d mask %v: row %d filled %d times", chunk, mask, i, c)
				}
			}
			clear(covered)
			clear(want)
			clear(got)
			if err := pre.Sum(mask, want); err != nil {
				t.Fatal(err)
			}
			if err := w.SumFill(mask, got, fill); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("chunk %d: filled sum differs from the pre-filled one", chunk)
			}
		}
	}
}

func TestFillErrorLeavesDstUntouched(t *testing.T) {
	const batch = 8
	rng := rand.New(rand.NewPCG(25, 26))
	w := newWorkspace(t, randomTaps[float64](rng, testSpecs, batch), batch)
	w.SetChunkRows(2)
	boom := errors.New("boom")
	dst := make([]float64, w.NumParams())
	_, err := w.ClippedSumFill(nil, Flat{C: 1}, dst, func(_, lo, _ int) error {
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

// TestReproducibleAcrossCores checks that the result does not depend on how many cores
// share the work: the partition into chunks and groups depends only on the rows.
func TestReproducibleAcrossCores(t *testing.T) {
	const batch = 64
	rng := rand.New(rand.NewPCG(27, 28))
	w := newWorkspace(t, randomTaps[float32](rng, testSpecs, batch), batch)
	w.SetChunkRows(2)
	var results [][]float64
	for _, procs := range []int{1, 2, 5} {
		old := runtime.GOMAXPROCS(procs)
		for range 3 {
			got := make([]float64, w.NumParams())
			if _, err := w.ClippedSum(nil, Flat{C: 0.1}, got); err != nil {
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
