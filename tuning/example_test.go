package tuning_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
	"github.com/privtrain/privtrain/tuning"
)

// Tune the learning rate of private logistic regression on 2,000 embedded digits: a
// random number of trials (geometric, mean 2), each trained with DP-SGD at the noise
// multiplier that makes the whole search ε = 2, and scored on a held-out fifth by its
// count of correct predictions plus N(0, 10²). That ε covers the release of the best
// trial's model, values and noisy score; the trial lines are for the data holder. The
// number of trials and their values follow from the seed alone.
func ExampleSearch() {
	_, digits, err := mnist.Embedded() // the 2,000 digits of its test part stand for private data
	if err != nil {
		panic(err)
	}
	train, val, err := tuning.Split(digits, 0.2, 1) // a fifth held out, by each example's content
	if err != nil {
		panic(err)
	}
	trials, err := accountant.GeometricTrials(2)
	if err != nil {
		panic(err)
	}
	const batch, epochs = 100, 1
	acc, err := tuning.Privacy{
		Trials: trials, Examples: train.Len(), ScoreNoise: 10, Delta: 1e-5,
		Plans: []tuning.Plan{{BatchSize: batch, Epochs: epochs}}, // every trial's plan
	}.Calibrate(2) // the noise multiplier for ε = 2 for the whole search (At(z) takes a given z)
	if err != nil {
		panic(err)
	}
	z := acc.NoiseMultiplier
	fmt.Printf("the search spends at most ε = 2 at δ = 1e-5: %v, one trial less: %v\n",
		acc.Search.Epsilon <= 2, acc.Trial.Epsilon < acc.Search.Epsilon)

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
				Data:     training.Data{Train: train, Test: val, Name: "mnist-embedded-test"},
				Rule:     dpoptim.NewSGD(dpoptim.Constant(lr)),
				Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: z, Delta: 1e-5},
				Schedule: training.Schedule{BatchSize: batch, Epochs: epochs},
				Seed:     &t.Seed,
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
	// the search spends at most ε = 2 at δ = 1e-5: true, one trial less: true
	// 4 trials drawn
	// trial 1: lr=0.5
	// trial 2: lr=0.5
	// trial 3: lr=2
	// trial 4: lr=2
	// best of 4 trials: noisy validation accuracy above chance: true; its checkpoint's ledger holds one trial: true
}
