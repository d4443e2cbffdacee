package clipping

import "github.com/privtrain/privtrain/internal/num"

// The tests describe layers by the fields of the former Tap struct and turn them into the
// kinds' Gradients (Dense, Conv) through gradients.

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

// gradient is the kind's Gradient, nil for an unknown kind.
func (t Tap[T]) gradient() Gradient[T] {
	switch t.Kind {
	case denseKind:
		return &Dense[T]{In: t.In, GradZ: t.GradZ, InDim: t.InDim, OutDim: t.OutDim, Bias: t.Bias, InOrder: t.InOrder}
	case convKind:
		return Formed[T](&Conv[T]{In: t.In, GradZ: t.GradZ, InDim: t.InDim, OutDim: t.OutDim, Positions: t.Positions,
			Bias: t.Bias, PositionsMajor: t.PositionsMajor, InOrder: t.InOrder, Patches: t.Patches})
	}
	return nil
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
