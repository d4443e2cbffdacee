package layers_test

import (
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/layers"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/num"
)

func benchFill[T num.Float](rng *rand.Rand, n int) []T {
	x := make([]T, n)
	for j := range x {
		x[j] = T(rng.NormFloat64())
	}
	return x
}

func benchKind[T num.Float](b *testing.B, g clipping.Gradient[T], batch int) {
	w, err := clipping.NewWorkspace([]clipping.Gradient[T]{g}, batch)
	if err != nil {
		b.Fatal(err)
	}
	mask := make([]bool, batch)
	for i := range mask {
		mask[i] = i%7 != 6
	}
	dst := make([]float64, w.NumParams())
	b.Run("clipped", func(b *testing.B) {
		for b.Loop() {
			if _, err := w.ClippedSum(mask, clipping.Flat{C: 1}, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sum", func(b *testing.B) {
		for b.Loop() {
			if err := w.Sum(mask, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDenseKind is MNIST's first dense layer (512→32) at batch 256, float32.
func BenchmarkDenseKind(b *testing.B) {
	const batch, k, f = 256, 512, 32
	rng := rand.New(rand.NewPCG(1, 2))
	benchKind[float32](b, &layers.DenseGradient[float32]{In: benchFill[float32](rng, batch*k), GradZ: benchFill[float32](rng, batch*f),
		InDim: k, OutDim: f, Bias: true}, batch)
}

// BenchmarkConvKind is MNIST's second conv layer (16·4·4 → 32 at 5×5 positions) at batch
// 256, float32, Gorgonia's layout.
func BenchmarkConvKind(b *testing.B) {
	const batch, k, f, p = 256, 256, 32, 25
	rng := rand.New(rand.NewPCG(1, 2))
	benchKind[float32](b, clipping.Formed[float32](&layers.Conv2DGradient[float32]{In: benchFill[float32](rng, batch*p*k), GradZ: benchFill[float32](rng, batch*f*p),
		InDim: k, OutDim: f, Positions: p, Bias: true}), batch)
}
