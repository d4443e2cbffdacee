package clipping_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/clipping/clippingtest"
	"github.com/privtrain/privtrain/internal/num"
)

// The Workspace's machinery (chunks, rules, groups, fills, padding, float32 rounding) is
// tested here on test-only kinds, through clippingtest's suite; the layers' own kinds
// (layers.DenseGradient, layers.Conv2DGradient), their layouts and fast paths run the same
// suite in package layers.

// bruteKind is a test-only kind: example i's gradient written out from the chain rule
// (clippingtest.BruteGradient), in the reference layout (no InOrder, PositionsMajor or
// Patches), through clipping.Formed.
type bruteKind[T num.Float] struct{ t clippingtest.Layer[T] }

func brute[T num.Float](t clippingtest.Layer[T]) clipping.Gradient[T] {
	return clipping.Formed[T](bruteKind[T]{t})
}

var bruteKinds = clippingtest.Kinds{F64: brute[float64], F32: brute[float32]}

func (k bruteKind[T]) NumParams() int { return k.t.NumParams() }

func (k bruteKind[T]) Check(batch int) error {
	t := k.t
	P := t.PositionsPerExample()
	if t.InDim <= 0 || t.OutDim <= 0 || P <= 0 {
		return fmt.Errorf("%w: test kind with InDim %d, OutDim %d, positions %d", clipping.ErrShape, t.InDim, t.OutDim, P)
	}
	if len(t.In) != batch*P*t.InDim || len(t.GradZ) != batch*P*t.OutDim {
		return fmt.Errorf("%w: test kind buffers of %d and %d values", clipping.ErrShape, len(t.In), len(t.GradZ))
	}
	return nil
}

func (k bruteKind[T]) NewExampleScratch() clipping.ExampleScratch[T] { return k }

func (k bruteKind[T]) Example(_, i int, g []T) {
	for j, v := range clippingtest.BruteGradient([]clippingtest.Layer[T]{k.t}, i)[0] {
		g[j] = T(v)
	}
}

// TestWorkspaceConformance runs the kinds' suite on the brute-force kind.
func TestWorkspaceConformance(t *testing.T) {
	clippingtest.Run(t, bruteKinds)
}

// exampleDense is a test-only kind written the way a new layer would be first: it only
// forms example i's gradient (outer(A_i, dZ_i), then dZ_i) into a buffer.
type exampleDense[T num.Float] struct{ d clippingtest.Layer[T] }

func (e exampleDense[T]) NumParams() int                                { return e.d.NumParams() }
func (e exampleDense[T]) Check(batch int) error                         { return bruteKind[T]{e.d}.Check(batch) }
func (e exampleDense[T]) NewExampleScratch() clipping.ExampleScratch[T] { return e }
func (e exampleDense[T]) Example(_, i int, g []T) {
	k, F := e.d.InDim, e.d.OutDim
	for r := range k {
		for o := range F {
			g[r*F+o] = e.d.In[i*k+r] * e.d.GradZ[i*F+o]
		}
	}
	copy(g[k*F:], e.d.GradZ[i*F:(i+1)*F])
}

var _ clipping.ExampleKind[float64] = exampleDense[float64]{}

// TestFormedMatchesChainRule runs a network whose dense layers are such kinds (Formed,
// with no plain-sum fast path) through the Workspace and checks per-example gradients,
// norms and clipped and plain sums against the brute-force reference.
func TestFormedMatchesChainRule(t *testing.T) {
	const batch = 7
	rng := rand.New(rand.NewPCG(41, 42))
	specs := []clippingtest.Spec{
		{Kind: clippingtest.Conv, InDim: 5, OutDim: 2, Positions: 3, Bias: true},
		{Kind: clippingtest.Dense, InDim: 6, OutDim: 3, Positions: 1, Bias: true},
		{Kind: clippingtest.Dense, InDim: 3, OutDim: 2, Positions: 1, Bias: true},
	}
	taps := clippingtest.RandomLayers[float64](rng, specs, batch)
	grads := clippingtest.Gradients(bruteKinds, taps)
	for l, tp := range taps {
		if tp.Kind == clippingtest.Dense {
			grads[l] = clipping.Formed[float64](exampleDense[float64]{tp})
		}
	}
	w, err := clipping.NewWorkspace(grads, batch)
	if err != nil {
		t.Fatal(err)
	}
	clippingtest.CheckPerExample(t, w, taps, 1e-13)
	mask := []bool{true, false, true, true, true, false, true}
	for _, chunk := range []int{1, 3, batch} {
		w.SetChunkRows(chunk)
		want, wantNorms := clippingtest.ReferenceClippedSum(taps, batch, mask, nil, 0.5)
		sum := make([]float64, w.NumParams())
		st, err := w.ClippedSum(mask, clipping.Flat{C: 0.5}, sum)
		if err != nil {
			t.Fatal(err)
		}
		clippingtest.AssertClose(t, "clipped sum", sum, want, 1e-12)
		clippingtest.AssertClose(t, "norms", st.Norms, wantNorms, 1e-12)
		plain := make([]float64, w.NumParams())
		if err := w.Sum(mask, plain); err != nil {
			t.Fatal(err)
		}
		wantPlain := make([]float64, w.NumParams())
		for i, real := range mask {
			if real {
				for j, v := range slices.Concat(clippingtest.BruteGradient(taps, i)...) {
					wantPlain[j] += v
				}
			}
		}
		clippingtest.AssertClose(t, "plain sum", plain, wantPlain, 1e-12)
	}
}
