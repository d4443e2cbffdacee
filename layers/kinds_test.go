package layers_test

import (
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/clipping/clippingtest"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
)

// kind is the Dense and Conv2D per-example gradient kinds (DenseGradient, a full
// clipping.Gradient with its own fast path, and Conv2DGradient through clipping.Formed)
// of a clippingtest layer, in every layout the layer describes.
func kind[T num.Float](t clippingtest.Layer[T]) clipping.Gradient[T] {
	if t.Kind == clippingtest.Dense {
		return &layers.DenseGradient[T]{In: t.In, GradZ: t.GradZ, InDim: t.InDim, OutDim: t.OutDim, Bias: t.Bias, InOrder: t.InOrder}
	}
	return clipping.Formed[T](&layers.Conv2DGradient[T]{In: t.In, GradZ: t.GradZ, InDim: t.InDim, OutDim: t.OutDim, Positions: t.Positions,
		Bias: t.Bias, PositionsMajor: t.PositionsMajor, InOrder: t.InOrder, Patches: t.Patches})
}

// TestKindsConformance runs clipping's conformance suite on the Dense and Conv2D kinds,
// in Gorgonia's layout and the native engine's (InOrder, PositionsMajor, Patches):
// per-example gradients, norms and clipped and plain sums against the chain rule written
// out, padding, chunks, fills, groups, float32 at and near C, errors.
func TestKindsConformance(t *testing.T) {
	clippingtest.Run(t, clippingtest.Kinds{F64: kind[float64], F32: kind[float32],
		Layouts: clippingtest.Layouts{InOrder: true, PositionsMajor: true, Patches: true}})
}
