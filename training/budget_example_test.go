package training_test

import (
	"context"
	"fmt"
	"os"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// Record two runs' spend on the same data in a budget store: RunBudgeted reserves each
// run's plan before its first step (a plan past Limit would be refused), runs it and
// commits the steps it took, however it stopped. The store composes the data set's runs:
// the second run's settled ε is that of both. (cmd/train does the same with
// ReserveBudget and BudgetRecord.Commit around its own reporting; for the per-user store
// the commands share, open budget.ResolveDir("").) With q = 1 each step is the Gaussian
// mechanism: T steps with z = 4 have the RDP Tα/(2z²), which converts (Balle et al. 2020)
// to ε = 1.847 for T = 3 and 2.714 for T = 6 at δ = 1e-5 (TestBudgetExampleNumbers).
func ExampleRunBudgeted() {
	dir, err := os.MkdirTemp("", "privtrain-budget")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := budget.Open(dir, nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	train, _, err := mnist.Embedded()
	if err != nil {
		panic(err)
	}
	digits, err := datasets.StratifiedSubset(train, 100)
	if err != nil {
		panic(err)
	}
	for run := 1; run <= 2; run++ {
		m, err := nn.New(models.LogisticRegression(), 100, nn.WithSeed(1))
		if err != nil {
			panic(err)
		}
		tr, err := training.NewTrainer(m, training.TrainerConfig{
			Data:     training.Data{Train: digits, Name: "digits-100"},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 4, Delta: 1e-5},
			Schedule: training.Schedule{BatchSize: 100, Epochs: 3}, // q = 1: 3 steps of the Gaussian mechanism
		})
		if err != nil {
			panic(err)
		}
		res, total, err := training.RunBudgeted(context.Background(), store, tr, training.BudgetRun{Name: "digits-100", Limit: 10})
		if err != nil {
			panic(err)
		}
		fmt.Printf("run %d: %d steps, ε = %.3f; the data set's runs together: ε = %.3f at δ = %g (%s)\n",
			run, res.Steps, res.Spent.Epsilon, total.Epsilon, total.Delta, total.Method)
	}
	d, runs, err := store.Runs(datasets.ContentFingerprint(digits), 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("store: %d runs of %d steps in all, none unsettled: %v\n", len(runs), d.Steps, d.Unsettled == 0)
	// Output:
	// run 1: 3 steps, ε = 1.847; the data set's runs together: ε = 1.847 at δ = 1e-05 (rdp)
	// run 2: 3 steps, ε = 1.847; the data set's runs together: ε = 2.714 at δ = 1e-05 (rdp)
	// store: 2 runs of 6 steps in all, none unsettled: true
}
