// Package clippingtest is the conformance suite of clipping's per-example gradient kinds:
// the tests of the Workspace's machinery (per-example gradients, norms, flat and per-layer
// clipping, plain sums, padding rows, chunks, fills, augmentation groups, float32
// rounding near and above C, errors) written once, run on a network of random dense and
// conv test layers whose gradients come from the kind under test, against the chain rule
// written out loop by loop (BruteGradient).
//
// Package clipping's tests run it on a test-only kind (the brute-force gradient through
// clipping.Formed), package layers' on the real kinds (DenseGradient, Conv2DGradient)
// with the layouts they read (Layouts: InOrder, PositionsMajor, Patches):
//
//	clippingtest.Run(t, clippingtest.Kinds{F64: kind[float64], F32: kind[float32], Layouts: …})
package clippingtest

import (
	"math"
	"math/rand/v2"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// Kind is what a test layer computes.
type Kind int

const (
	// Dense is Z = A·W + b: In is [B × InDim], GradZ [B × OutDim]; the gradient is W's
	// [InDim × OutDim] (row a, column o at a·OutDim+o), then b's OutDim entries.
	Dense Kind = iota
	// Conv is Z_i = W·U_iᵀ + b per example: In is U, [B × Positions × InDim], GradZ
	// [B × OutDim × Positions] (Gorgonia's layout); the gradient is W's [OutDim × InDim],
	// then b's OutDim entries (each a sum over positions).
	Conv
)

// Layer is one test layer: a dense or conv gradient's fields in one struct. Without the
// layout fields (PositionsMajor, InOrder, Patches) its buffers are in the reference layout
// that BruteGradient reads.
type Layer[T num.Float] struct {
	Kind                     Kind
	In, GradZ                []T
	InDim, OutDim, Positions int
	Bias                     bool
	// PositionsMajor says a Conv layer's GradZ is [B × Positions × OutDim].
	PositionsMajor bool
	// InOrder, when not nil, says column j of In is multiplied by weight column (Conv) or
	// row (Dense) InOrder[j].
	InOrder []int
	// Patches, when not nil, stands in for a Conv layer's In: example i's
	// [Positions × InDim] rows in In's order, from a cache or copied into buf.
	Patches func(worker, i int, buf []T) []T
}

// NumParams is InDim·OutDim, plus OutDim with a bias.
func (t Layer[T]) NumParams() int {
	n := t.InDim * t.OutDim
	if t.Bias {
		n += t.OutDim
	}
	return n
}

// PositionsPerExample is 1 for Dense, Positions for Conv.
func (t Layer[T]) PositionsPerExample() int {
	if t.Kind == Dense {
		return 1
	}
	return t.Positions
}

// Layouts are the stored layouts a kind reads besides the reference one.
type Layouts struct {
	// InOrder: the kinds read In's columns through Layer.InOrder and refuse one that is
	// not a permutation.
	InOrder bool
	// PositionsMajor: the Conv kind reads GradZ positions-major when
	// Layer.PositionsMajor is set.
	PositionsMajor bool
	// Patches: the Conv kind reads Layer.Patches in place of a nil In.
	Patches bool
}

func (l Layouts) any() bool { return l.InOrder || l.PositionsMajor || l.Patches }

// Kinds is the kind under test, in both precisions: the clipping.Gradient of a test
// layer (only Dense and Conv layers are handed to it), and the layouts it supports.
type Kinds struct {
	F64     func(Layer[float64]) clipping.Gradient[float64]
	F32     func(Layer[float32]) clipping.Gradient[float32]
	Layouts Layouts
}

// kindFunc is k's function for T.
func kindFunc[T num.Float](k Kinds) func(Layer[T]) clipping.Gradient[T] {
	var f any = k.F64
	var zero T
	if _, ok := any(zero).(float32); ok {
		f = k.F32
	}
	return f.(func(Layer[T]) clipping.Gradient[T])
}

// Gradients are the layers' gradients under k: nil for a layer of an unknown Kind (which
// NewWorkspace must refuse), nil for nil layers.
func Gradients[T num.Float](k Kinds, layers []Layer[T]) []clipping.Gradient[T] {
	if layers == nil {
		return nil
	}
	kind := kindFunc[T](k)
	out := make([]clipping.Gradient[T], len(layers))
	for l, t := range layers {
		if t.Kind == Dense || t.Kind == Conv {
			out[l] = kind(t)
		}
	}
	return out
}

// Spec describes one random layer of a test network.
type Spec struct {
	Kind                     Kind
	InDim, OutDim, Positions int
	Bias                     bool
}

// specs is the suite's network: two conv layers and two dense ones, with and without bias.
var specs = []Spec{
	{Conv, 6, 3, 7, true},
	{Conv, 4, 2, 5, false},
	{Dense, 9, 4, 1, true},
	{Dense, 4, 3, 1, false},
}

// RandomLayers draws layers whose per-example scales spread over three orders of
// magnitude, so that with C = 1 some examples are clipped and some are not.
func RandomLayers[T num.Float](rng *rand.Rand, specs []Spec, batch int) []Layer[T] {
	scale := make([]float64, batch)
	for i := range scale {
		scale[i] = math.Pow(10, -2+3*rng.Float64())
	}
	taps := make([]Layer[T], len(specs))
	for l, s := range specs {
		p := max(s.Positions, 1)
		t := Layer[T]{Kind: s.Kind, InDim: s.InDim, OutDim: s.OutDim, Positions: s.Positions, Bias: s.Bias,
			In: make([]T, batch*p*s.InDim), GradZ: make([]T, batch*s.OutDim*p)}
		for j := range t.In {
			t.In[j] = T(rng.NormFloat64())
		}
		per := s.OutDim * p
		for j := range t.GradZ {
			t.GradZ[j] = T(scale[j/per] * rng.NormFloat64() / 4)
		}
		taps[l] = t
	}
	return taps
}

// relayout returns layers holding the same per-example gradients as taps, stored in the
// layouts lay names, the way a native NHWC network stores them: the columns of In
// permuted (InOrder says where each one goes), conv GradZ positions-major.
func relayout[T num.Float](rng *rand.Rand, taps []Layer[T], batch int, lay Layouts) []Layer[T] {
	out := make([]Layer[T], len(taps))
	for l, t := range taps {
		k, F, P := t.InDim, t.OutDim, t.PositionsPerExample()
		n := t
		if lay.InOrder {
			perm := rng.Perm(k)
			n.InOrder = perm
			n.In = make([]T, len(t.In))
			for r := range batch * P {
				for j := range k {
					n.In[r*k+j] = t.In[r*k+perm[j]]
				}
			}
		}
		if t.Kind == Conv && lay.PositionsMajor {
			n.PositionsMajor = true
			n.GradZ = make([]T, len(t.GradZ))
			for i := range batch {
				for f := range F {
					for p := range P {
						n.GradZ[(i*P+p)*F+f] = t.GradZ[(i*F+f)*P+p]
					}
				}
			}
		}
		out[l] = n
	}
	return out
}
