package clipping

import (
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// Gradient is one parametrised layer's per-example gradients, as a layer kind forms them
// from what its network's backward pass left (typically the layer's input and the gradient
// of the summed loss at its output, refreshed in place before every Workspace call). It is
// the only thing a Workspace knows about a layer: each kind (package layers keeps one beside
// each parametrised layer, e.g. layers.DenseGradient, or any kind wrapped by Formed)
// implements it in one file.
//
// The layer's parameters occupy NumParams consecutive entries of the flat parameter vector.
// A kind may keep sums in an order of its own ("kind order", e.g. a permuted weight);
// Scatter maps that order to the flat layout.
type Gradient[T num.Float] interface {
	// NumParams is the number of parameters of the layer.
	NumParams() int
	// Check reports (ErrShape) whether the kind's buffers fit a batch of the given size.
	Check(batch int) error
	// RowScratch is the number of values of T per row that the kind's Scratch holds for a
	// chunk (per-example gradients formed ahead of their clipped sum); the Workspace sizes
	// its default chunk by it.
	RowScratch() int
	// NewScratch returns one worker's buffers for chunks of at most chunk rows. A scratch
	// is only used by one goroutine at a time.
	NewScratch(chunk int) Scratch[T]
	// Scatter adds g, NumParams values in kind order, into dst (NumParams values in the
	// flat layout), or with overwrite writes them.
	Scatter(g []T, dst []float64, overwrite bool)
}

// Scratch is a Gradient's work for one worker. rows are batch rows (real examples,
// increasing); worker is the Filler's worker whose fill the call follows (its activations
// may still be in that worker's cache) or −1. A method reads only the given rows.
type Scratch[T num.Float] interface {
	// SquaredNorms writes ‖g_i‖² of example rows[q]'s gradient into sq[q].
	SquaredNorms(worker int, rows []int, sq []float64)
	// ClippedSum adds Σ_q coef[q]·g_{rows[q]} to acc (NumParams values, kind order). It is
	// called right after SquaredNorms with the same rows, so that a kind may reuse what
	// it formed there.
	ClippedSum(worker int, rows []int, coef []T, acc []T)
	// Sum adds Σ_q g_{rows[q]} to acc (kind order).
	Sum(worker int, rows []int, acc []T)
	// Example writes example i's gradient into g (NumParams values, kind order).
	Example(worker, i int, g []T)
}

// ExampleKind is the least a new layer kind implements: forming one example's gradient
// into a buffer. Formed turns it into a Gradient that forms a chunk's gradients in
// per-worker scratch, takes their norms, and adds their clipped sum with one GEMM.
type ExampleKind[T num.Float] interface {
	NumParams() int
	Check(batch int) error
	// NewExampleScratch returns one worker's buffers for forming examples.
	NewExampleScratch() ExampleScratch[T]
}

// ExampleScratch forms examples for one worker.
type ExampleScratch[T num.Float] interface {
	// Example writes example i's gradient into g (NumParams values, in the flat layout
	// unless the kind is a Scatterer).
	Example(worker, i int, g []T)
}

// ExampleAdder is an optional ExampleScratch method for plain sums: acc += g_i without
// forming g_i.
type ExampleAdder[T num.Float] interface {
	AddExample(worker, i int, acc []T)
}

// Scatterer is an optional ExampleKind method for a kind whose gradients are not in the
// flat layout (see Gradient.Scatter).
type Scatterer[T num.Float] interface {
	Scatter(g []T, dst []float64, overwrite bool)
}

// Formed is the Gradient of an ExampleKind.
func Formed[T num.Float](k ExampleKind[T]) Gradient[T] { return formed[T]{k} }

type formed[T num.Float] struct{ ExampleKind[T] }

var _ Gradient[float32] = formed[float32]{}

func (f formed[T]) RowScratch() int { return f.NumParams() }

// Unwrap is the ExampleKind (for tests and diagnostics that read a kind's buffers).
func (f formed[T]) Unwrap() ExampleKind[T] { return f.ExampleKind }

func (f formed[T]) Scatter(g []T, dst []float64, overwrite bool) {
	if s, ok := f.ExampleKind.(Scatterer[T]); ok {
		s.Scatter(g, dst, overwrite)
		return
	}
	Scatter(g, dst, overwrite)
}

func (f formed[T]) NewScratch(chunk int) Scratch[T] {
	return &formedScratch[T]{ex: f.NewExampleScratch(), np: f.NumParams(), grads: make([]T, chunk*f.NumParams())}
}

type formedScratch[T num.Float] struct {
	ex    ExampleScratch[T]
	np    int
	grads []T // [chunk × np]: the last SquaredNorms' gradients
}

func (s *formedScratch[T]) SquaredNorms(worker int, rows []int, sq []float64) {
	for q, i := range rows {
		g := s.grads[q*s.np : (q+1)*s.np]
		s.ex.Example(worker, i, g)
		sq[q] = gemm.SumSquares(g)
	}
}

// ClippedSum is acc += coefᵀ·G, one GEMM with the chunk's examples as the inner dimension.
func (s *formedScratch[T]) ClippedSum(_ int, rows []int, coef, acc []T) {
	n := len(rows)
	gemm.Gemm(1, s.np, n, gemm.Matrix[T]{Data: coef[:n], Stride: 1, ColMajor: true}, s.grads, s.np,
		acc[:s.np], s.np, nil, gemm.Accumulate)
}

func (s *formedScratch[T]) Sum(worker int, rows []int, acc []T) {
	if a, ok := s.ex.(ExampleAdder[T]); ok {
		for _, i := range rows {
			a.AddExample(worker, i, acc)
		}
		return
	}
	g := s.grads[:s.np]
	for _, i := range rows {
		s.ex.Example(worker, i, g)
		for j, v := range g {
			acc[j] += v
		}
	}
}

func (s *formedScratch[T]) Example(worker, i int, g []T) { s.ex.Example(worker, i, g) }

// Scatter adds (or, with overwrite, writes) g into dst, both in the same order: the
// Scatter of a kind whose gradients are in the flat layout.
func Scatter[T num.Float](g []T, dst []float64, overwrite bool) {
	if overwrite {
		for j, v := range g {
			dst[j] = float64(v)
		}
		return
	}
	for j, v := range g {
		dst[j] += float64(v)
	}
}

// Shape is a parametrised layer's gradient kind before it is bound to buffers: what a
// layer's Gorgonia fragment hands over (layers.Tap), for either dtype. in and gradZ are
// the tap's input and output-gradient nodes' values, in Gorgonia's layout.
type Shape interface {
	// NumParams is the number of parameters the gradient covers.
	NumParams() int
	Bind32(in, gradZ []float32) Gradient[float32]
	Bind64(in, gradZ []float64) Gradient[float64]
}

// Bind binds s to buffers of T.
func Bind[T num.Float](s Shape, in, gradZ []T) Gradient[T] {
	switch b := any(in).(type) {
	case []float32:
		return any(s.Bind32(b, any(gradZ).([]float32))).(Gradient[T])
	default:
		return any(s.Bind64(any(in).([]float64), any(gradZ).([]float64))).(Gradient[T])
	}
}
