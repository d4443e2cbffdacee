package layers_test

import (
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
)

// The tests of the Dense and Conv2D per-example gradient kinds (DenseGradient,
// Conv2DGradient) through clipping's Workspace, moved here from package clipping with the
// kinds. They describe layers by the fields of a kindTap and turn them into the kinds'
// Gradients through gradients; the reference is the chain rule written out loop by loop
// (bruteGradient).

type testKind int

const (
	denseKind testKind = iota
	convKind
)

// kindTap is one test layer: a dense or conv gradient's fields in one struct.
type kindTap[T num.Float] struct {
	Kind                     testKind
	In, GradZ                []T
	InDim, OutDim, Positions int
	Bias                     bool
	PositionsMajor           bool
	InOrder                  []int
	Patches                  func(worker, i int, buf []T) []T
}

func (t kindTap[T]) NumParams() int {
	n := t.InDim * t.OutDim
	if t.Bias {
		n += t.OutDim
	}
	return n
}

func (t kindTap[T]) positions() int {
	if t.Kind == denseKind {
		return 1
	}
	return t.Positions
}

// gradient is the kind's clipping.Gradient, nil for an unknown kind.
func (t kindTap[T]) gradient() clipping.Gradient[T] {
	switch t.Kind {
	case denseKind:
		return &layers.DenseGradient[T]{In: t.In, GradZ: t.GradZ, InDim: t.InDim, OutDim: t.OutDim, Bias: t.Bias, InOrder: t.InOrder}
	case convKind:
		return clipping.Formed[T](&layers.Conv2DGradient[T]{In: t.In, GradZ: t.GradZ, InDim: t.InDim, OutDim: t.OutDim, Positions: t.Positions,
			Bias: t.Bias, PositionsMajor: t.PositionsMajor, InOrder: t.InOrder, Patches: t.Patches})
	}
	return nil
}

func gradients[T num.Float](taps []kindTap[T]) []clipping.Gradient[T] {
	if taps == nil {
		return nil
	}
	out := make([]clipping.Gradient[T], len(taps))
	for l, t := range taps {
		out[l] = t.gradient()
	}
	return out
}

// offsets is where each tap's parameters start in the flat gradient.
func offsets[T num.Float](taps []kindTap[T]) []int {
	out := make([]int, len(taps))
	for l := 1; l < len(taps); l++ {
		out[l] = out[l-1] + taps[l-1].NumParams()
	}
	return out
}
