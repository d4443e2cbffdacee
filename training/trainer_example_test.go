package training_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// Train the MNIST CNN with DP-Adam on 1,000 embedded digits (tested on 500) at ε = 1, δ = 1e-5, then save
// the run and load it back. The trainer calibrates the noise for the whole plan before
// the first step; a seed makes the run reproducible (leave Seed nil for noise and
// sampling from crypto/rand).
func ExampleTrainer() {
	train, test, err := mnist.Embedded()
	if err != nil {
		panic(err)
	}
	small, err := datasets.StratifiedSubset(train, 1000)
	if err != nil {
		panic(err)
	}
	testSmall, err := datasets.StratifiedSubset(test, 500)
	if err != nil {
		panic(err)
	}
	m, err := nn.New(models.MNISTCNN(models.Tanh), 50, nn.WithSeed(1)) // physical batch 50
	if err != nil {
		panic(err)
	}
	seed := uint64(1)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: small, Test: testSmall, Name: "mnist-embedded-1000"},
		Rule:     dpoptim.NewAdam(dpoptim.Constant(1e-2)), // cmd/train's DP-Adam default
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, TargetEpsilon: 1, Delta: 1e-5},
		Schedule: training.Schedule{BatchSize: 100, Epochs: 2}, Seed: &seed,
	})
	if err != nil {
		panic(err)
	}
	p := tr.Plan()
	fmt.Printf("%s, %v sampling q = %.2f, %d steps: noise multiplier %.3f for ε = %g\n",
		tr.Optimizer().Name(), p.Sampling, p.SampleRate, p.Steps, p.NoiseMultiplier, p.TargetEpsilon)

	res, err := tr.Run(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("spent ε = %.3f at δ = %g (within budget: %v), above chance: %v\n",
		res.Spent.Epsilon, p.Delta, res.Spent.Epsilon <= 1, res.TestAccuracy > 0.2)

	dir, err := os.MkdirTemp("", "privtrain-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.ckpt")
	c, err := tr.Checkpoint()
	if err != nil {
		panic(err)
	}
	if err := checkpoint.Save(path, c); err != nil {
		panic(err)
	}
	loaded, err := checkpoint.Load(path)
	if err != nil {
		panic(err)
	}
	spent, err := loaded.Spent()
	if err != nil {
		panic(err)
	}
	fmt.Printf("loaded %s on %s: step %d, epoch %d, noise %s, ε = %.3f\n",
		loaded.Optimizer, loaded.Model, loaded.Step, loaded.Epoch, loaded.Noise, spent.Epsilon)
	// Output:
	// DP-Adam, poisson sampling q = 0.10, 20 steps: noise multiplier 2.296 for ε = 1
	// spent ε = 1.000 at δ = 1e-05 (within budget: true), above chance: true
	// loaded DP-Adam on mnist-cnn-tanh: step 20, epoch 2, noise seeded(1), ε = 1.000
}
