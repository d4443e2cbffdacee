package clipping

import (
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/num"
)

// exampleDense is a test-only kind written the way a new layer would be first: it only
// forms example i's gradient (outer(A_i, dZ_i), then dZ_i) into a buffer.
type exampleDense[T num.Float] struct{ d Tap[T] }

func (e exampleDense[T]) NumParams() int                       { return e.d.NumParams() }
func (e exampleDense[T]) Check(batch int) error                { return bruteKind[T]{e.d}.Check(batch) }
func (e exampleDense[T]) NewExampleScratch() ExampleScratch[T] { return e }
func (e exampleDense[T]) Example(_, i int, g []T) {
	k, F := e.d.InDim, e.d.OutDim
	for r := range k {
		for o := range F {
			g[r*F+o] = e.d.In[i*k+r] * e.d.GradZ[i*F+o]
		}
	}
	copy(g[k*F:], e.d.GradZ[i*F:(i+1)*F])
}

var _ ExampleKind[float64] = exampleDense[float64]{}

// TestFormedMatchesChainRule runs a network whose dense layers are such kinds (Formed,
// with no plain-sum fast path) through the Workspace and checks per-example gradients,
// norms and clipped and plain sums against the brute-force reference.
func TestFormedMatchesChainRule(t *testing.T) {
	const batch = 7
	rng := rand.New(rand.NewPCG(41, 42))
	specs := []tapSpec{{convKind, 5, 2, 3, true}, {denseKind, 6, 3, 1, true}, {denseKind, 3, 2, 1, true}}
	taps := randomTaps[float64](rng, specs, batch)
	grads := gradients(taps)
	for l, tp := range taps {
		if tp.Kind == denseKind {
			grads[l] = Formed[float64](exampleDense[float64]{tp})
		}
	}
	w, err := NewWorkspace(grads, batch)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, w.NumParams())
	for i := range batch {
		if err := w.PerExample(i, got); err != nil {
			t.Fatal(err)
		}
		assertClose(t, "per-example gradient", got, concat(bruteGradient(taps, i)), 1e-13)
	}
	mask := []bool{true, false, true, true, true, false, true}
	for _, chunk := range []int{1, 3, batch} {
		w.SetChunkRows(chunk)
		want, wantNorms := referenceClippedSum(taps, batch, mask, nil, 0.5)
		sum := make([]float64, w.NumParams())
		st, err := w.ClippedSum(mask, Flat{C: 0.5}, sum)
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "clipped sum", sum, want, 1e-12)
		assertClose(t, "norms", st.Norms, wantNorms, 1e-12)
		plain := make([]float64, w.NumParams())
		if err := w.Sum(mask, plain); err != nil {
			t.Fatal(err)
		}
		wantPlain := make([]float64, w.NumParams())
		for i, real := range mask {
			if real {
				for j, v := range concat(bruteGradient(taps, i)) {
					wantPlain[j] += v
				}
			}
		}
		assertClose(t, "plain sum", plain, wantPlain, 1e-12)
	}
}
