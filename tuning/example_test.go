package tuning_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
	"github.com/privtrain/privtrain/tuning"
)

// Tune the learning rate of private logistic regression on 1,000 embedded digits: a
// random number of trials (geometric, mean 2), each trained with DP-SGD at z = 2 and
// scored on a held-out fifth by its count of correct predictions plus N(0, 10²). The
// ε printed covers the release of the best trial's model, values and noisy score.
func ExampleSearch() {
	all, _, err := mnist.Embedded()
	if err != nil {
		panic(err)
	}
	small, err := datasets.StratifiedSubset(all, 1000)
	if err != nil {
		panic(err)
	}
	train, val, err := tuning.Split(small, 0.2, 1) // by each example's content
	if err != nil {
		panic(err)
	}
	trials, err := accountant.GeometricTrials(2)
	if err != nil {
		panic(err)
	}
	const batch, epochs, z = 100, 1, 2.0
	acc, err := tuning.Privacy{
		Trials: trials, Examples: train.Len(), ScoreNoise: 10, Delta: 1e-5,
		Plans: []tuning.Plan{{BatchSize: batch, Epochs: epochs}}, // every trial's plan
	}.At(z)
	if err != nil {
		panic(err)
	}
	fmt.Printf("the search: ε = %.2f at δ = 1e-5; one trial: ε = %.2f\n", acc.Search.Epsilon, acc.Trial.Epsilon)

	seed := uint64(3) // a reproducible search; nil draws everything with a secure key
	space := tuning.Space{{Name: "lr", Values: []string{"0.5", "2"}}}
	search := &tuning.Search{
		Space:      space,
		Accounting: acc,
		Seed:       &seed,
		Train: tuning.Trainers(func(t tuning.Trial) (*training.Trainer, error) {
			lr, err := strconv.ParseFloat(t.Config[0], 64)
			if err != nil {
				return nil, err
			}
			m, err := nn.New(models.LogisticRegression(), batch, nn.WithSeed(t.Seed))
			if err != nil {
				return nil, err
			}
			return training.NewTrainer(m, training.TrainerConfig{
				Train: train, Test: val, DatasetName: "mnist-embedded-1000",
				Rule:      dpoptim.NewSGD(dpoptim.Constant(lr)),
				Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: z, Delta: 1e-5},
				BatchSize: batch, Epochs: epochs, Seed: &t.Seed,
			})
		}, val.Len()),
		OnDrawn: func(k int) { fmt.Printf("%d trials drawn\n", k) },
		OnTrial: func(t tuning.Scored) { fmt.Printf("trial %d: %s\n", t.Index, space.Describe(t.Config)) },
	}
	res, err := search.Run(context.Background())
	if err != nil {
		panic(err)
	}
	// Which trial wins depends on the training; the search released only it.
	fmt.Printf("best of %d trials: noisy validation accuracy above chance: %v; its checkpoint's ledger holds one trial: %v\n",
		res.Trials, res.Best.Score/float64(val.Len()) > 0.2, len(res.Checkpoint.Ledger.History()) == 1)
	// Output:
	// the search: ε = 1.73 at δ = 1e-5; one trial: ε = 1.18
	// 4 trials drawn
	// trial 1: lr=0.5
	// trial 2: lr=0.5
	// trial 3: lr=2
	// trial 4: lr=2
	// best of 4 trials: noisy validation accuracy above chance: true; its checkpoint's ledger holds one trial: true
}
