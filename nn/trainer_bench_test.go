package nn_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

// BenchmarkTrainerEpoch times one private epoch of the default command's configuration
// (MNIST CNN, tanh, DP-SGD, expected batch 2048 of the 8,000 embedded digits, so four
// Poisson-sampled steps) for several physical batch sizes, and reports examples/s. The
// physical batch trades per-call overhead against the padding of each step's last chunk:
//
//	go test -run '^$' -bench TrainerEpoch -count 5 ./nn
func BenchmarkTrainerEpoch(b *testing.B) {
	train, _ := embedded(b, 8000)
	for _, physical := range []int{32, 64, 128, 256, 512} {
		b.Run(fmt.Sprintf("cnn/physical=%d", physical), func(b *testing.B) {
			m := newModel(b, models.MNISTCNN(models.Tanh), physical, nn.WithSeed(1))
			examples := 0
			tr := newTrainer(b, m, nn.TrainerConfig{
				Train: train, Rule: dpoptim.NewSGD(dpoptim.Constant(4)), BatchSize: 2048, Epochs: b.N, Seed: seedPtr(1),
				Privacy: &nn.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 3, Delta: 1e-5},
				OnStep:  func(p nn.StepProgress) error { examples += p.BatchSize; return nil },
			})
			b.ResetTimer()
			if _, err := tr.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(examples)/b.Elapsed().Seconds(), "examples/s")
		})
	}
}
