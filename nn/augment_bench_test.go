package nn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

// BenchmarkAugmultStep times one private clipped-gradient call of the MNIST CNN on a
// physical batch of 256 rows in groups of K rows (augmentation multiplicity K: 256/K
// examples of K views). K = 1 keeps the dense layers' free norms; K > 1 forms every
// layer's mean gradient per example. rows/s compares the cost per view:
//
//	go test -run '^$' -bench AugmultStep -count 3 ./nn
func BenchmarkAugmultStep(b *testing.B) {
	const rows = 256
	spec := models.MNISTCNN(models.ReLU)
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, rows*28*28)
	for i := range x {
		x[i] = rng.Float32()
	}
	labels := make([]int, rows)
	for i := range labels {
		labels[i] = rng.IntN(10)
	}
	for _, k := range []int{1, 2, 4, 8, 16} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			m := newModel(b, spec, rows, nn.WithSeed(1))
			if err := m.SetGroupSize(k); err != nil {
				b.Fatal(err)
			}
			grad := make([]float64, m.NumParams())
			batch := nn.Batch{X: x, Labels: labels}
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.ClippedGradient(batch, clipping.Flat{C: 1}, grad); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
