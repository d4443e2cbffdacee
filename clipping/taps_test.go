package clipping

import (
	"fmt"

	"github.com/privtrain/privtrain/internal/num"
)

// The tests describe layers by the fields of the former Tap struct and turn them into
// test-only kinds (bruteKind) through gradients: the Workspace's machinery (chunks, rules,
// groups, fills, padding) is tested here; the layer kinds in package layers.

type testKind int

const (
	denseKind testKind = iota
	convKind
)

// Tap is one test layer: a dense or conv gradient's fields in one struct.
type Tap[T num.Float] struct {
	Kind                     testKind
	In, GradZ                []T
	InDim, OutDim, Positions int
	Bias                     bool
	PositionsMajor           bool
	InOrder                  []int
	Patches                  func(worker, i int, buf []T) []T
}

func (t Tap[T]) NumParams() int {
	n := t.InDim * t.OutDim
	if t.Bias {
		n += t.OutDim
	}
	return n
}

func (t Tap[T]) positions() int {
	if t.Kind == denseKind {
		return 1
	}
	return t.Positions
}

// gradient is the tap's test-only kind, nil for an unknown kind.
func (t Tap[T]) gradient() Gradient[T] {
	if t.Kind != denseKind && t.Kind != convKind {
		return nil
	}
	return Formed[T](bruteKind[T]{t})
}

// bruteKind is a test-only kind: example i's gradient written out from the chain rule
// (bruteGradient), in the reference layout (no InOrder, PositionsMajor or Patches). The
// layers' own kinds (layers.DenseGradient, layers.Conv2DGradient), their layouts and
// their fast paths are tested in package layers against the same reference.
type bruteKind[T num.Float] struct{ t Tap[T] }

func (k bruteKind[T]) NumParams() int { return k.t.NumParams() }

func (k bruteKind[T]) Check(batch int) error {
	t := k.t
	P := t.positions()
	if t.InDim <= 0 || t.OutDim <= 0 || P <= 0 {
		return fmt.Errorf("%w: test kind with InDim %d, OutDim %d, positions %d", ErrShape, t.InDim, t.OutDim, P)
	}
	if len(t.In) != batch*P*t.InDim || len(t.GradZ) != batch*P*t.OutDim {
		return fmt.Errorf("%w: test kind buffers of %d and %d values", ErrShape, len(t.In), len(t.GradZ))
	}
	return nil
}

func (k bruteKind[T]) NewExampleScratch() ExampleScratch[T] { return k }

func (k bruteKind[T]) Example(_, i int, g []T) {
	for j, v := range bruteGradient([]Tap[T]{k.t}, i)[0] {
		g[j] = T(v)
	}
}

func gradients[T num.Float](taps []Tap[T]) []Gradient[T] {
	if taps == nil {
		return nil
	}
	out := make([]Gradient[T], len(taps))
	for l, t := range taps {
		out[l] = t.gradient()
	}
	return out
}
