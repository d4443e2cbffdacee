package training_test

import (
	"errors"
	"math"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// decayRate is η_k = 0.5/(1+k), written out for the test.
type decayRate struct{}

func (decayRate) Rate(k int) float64 { return 0.5 / float64(1+k) }

// iterTrainer is DP-SGD with the decaying step decayRate on logistic regression over the
// embedded digits, batch 60, with the iterate average avg (nil: none) and EMA ema.
func iterTrainer(t *testing.T, train, test datasets.Dataset, avg *dpoptim.IterateAverage, ema float64, onStep func(training.StepProgress) error) *training.Trainer {
	t.Helper()
	m := newModel(t, models.LogisticRegression(), 32, nn.WithSeed(3))
	return newTrainer(t, m, training.TrainerConfig{
		Data:      training.Data{Train: train, Test: test, Name: "mnist-subset"},
		Rule:      dpoptim.NewSGD(decayRate{}),
		Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.3, Delta: 1e-5},
		Schedule:  training.Schedule{BatchSize: 60, Epochs: 2},
		Seed:      seedPtr(11),
		Callbacks: training.Callbacks{OnStep: onStep},
		Averaging: training.Averaging{Iterate: avg, EMA: ema},
	})
}

// The trainer's average is Theorem 2's θ̃ = Σ_{k<T} η_k θ_k / Σ_{k<T} η_k (and Theorem 3's
// uniform Σ_{k<T} θ_k / T), recomputed by brute force from the parameters the model held
// before the run and after every step; the last iterate θ_T is not in it.
func TestIterateAverageMatchesBruteForce(t *testing.T) {
	train, _ := embedded(t, 600)
	for _, tc := range []struct {
		name    string
		weights dpoptim.Schedule
		w       func(k int) float64
	}{
		{"uniform", nil, func(int) float64 { return 1 }},
		{"step", decayRate{}, func(k int) float64 { return 0.5 / float64(1+k) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var thetas [][]float64
			var tr *training.Trainer
			tr = iterTrainer(t, train, nil, &dpoptim.IterateAverage{Weights: tc.weights}, 0, func(training.StepProgress) error {
				thetas = append(thetas, params(tr.Model()))
				return nil
			})
			thetas = append([][]float64{params(tr.Model())}, thetas...)
			run(t, tr)
			T := len(thetas) - 1
			if T != 20 {
				t.Fatalf("%d steps recorded, want 20", T)
			}
			want := make([]float64, len(thetas[0]))
			sum := 0.0
			for k := 0; k < T; k++ {
				sum += tc.w(k)
				for i := range want {
					want[i] += tc.w(k) * thetas[k][i]
				}
			}
			for i := range want {
				want[i] /= sum
			}
			got := make([]float64, len(want))
			if ok, err := tr.AveragedParams(got); !ok || err != nil {
				t.Fatalf("AveragedParams: %v, %v", ok, err)
			}
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
					t.Fatalf("average[%d] = %v, brute force %v", i, got[i], want[i])
				}
			}
			if firstDiff(params(tr.Model()), thetas[T]) >= 0 {
				t.Error("the model does not hold the last raw iterate")
			}
			if firstDiff(got, thetas[T]) < 0 {
				t.Error("average equals the last iterate; the test shows nothing")
			}
		})
	}
}

// Post-processing: the average only reads the parameters after each noisy update. A run
// with it has, bit for bit, the raw iterates and the privacy spent of the same run
// without it (it draws no randomness and changes no step), and its result is the
// evaluation of the average, not of the last iterate.
func TestIterateAverageIsPostProcessing(t *testing.T) {
	train, test := embedded(t, 600)
	var withIt, without [][]float64
	var a, b *training.Trainer
	a = iterTrainer(t, train, test, &dpoptim.IterateAverage{}, 0, func(training.StepProgress) error {
		withIt = append(withIt, params(a.Model()))
		return nil
	})
	b = iterTrainer(t, train, test, nil, 0, func(training.StepProgress) error {
		without = append(without, params(b.Model()))
		return nil
	})
	ra, rb := run(t, a), run(t, b)
	if len(withIt) != len(without) || len(withIt) == 0 {
		t.Fatalf("%d and %d steps", len(withIt), len(without))
	}
	for k := range withIt {
		if i := firstDiff(withIt[k], without[k]); i >= 0 {
			t.Fatalf("step %d: parameter %d differs with the average (%v) and without (%v)", k+1, i, withIt[k][i], without[k][i])
		}
	}
	if ra.Spent != rb.Spent {
		t.Errorf("spent %+v with the average, %+v without", ra.Spent, rb.Spent)
	}
	if ra.TestLoss == rb.TestLoss {
		t.Errorf("the same test loss %v with and without the average; the result is not the average's", ra.TestLoss)
	}
	avg := make([]float64, a.Model().NumParams())
	if ok, err := a.AveragedParams(avg); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// b's model holds the same last iterate; loaded with the average it must evaluate as a's result.
	if err := b.Model().SetParams(avg); err != nil {
		t.Fatal(err)
	}
	l, acc, err := b.Evaluate(test)
	if err != nil || l != ra.TestLoss || acc != ra.TestAccuracy {
		t.Errorf("the average evaluates to %v, %v (%v); the run reported %v, %v", l, acc, err, ra.TestLoss, ra.TestAccuracy)
	}
}

// Checkpoints hold the average as their parameters and name it in the settings; neither
// such a checkpoint nor a run with an iterate average can be resumed; EMA and an iterate
// average together are refused.
func TestIterateAverageCheckpointAndConfig(t *testing.T) {
	train, _ := embedded(t, 600)
	a := iterTrainer(t, train, nil, &dpoptim.IterateAverage{}, 0, nil)
	run(t, a)
	c, err := a.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	avg := make([]float64, a.Model().NumParams())
	_, _ = a.AveragedParams(avg)
	if i := firstDiff(c.Params, avg); i >= 0 {
		t.Errorf("checkpoint parameter %d = %v, the average %v", i, c.Params[i], avg[i])
	}
	if c.Settings[training.IterateAverageSetting] != "iterate average (uniform)" {
		t.Errorf("checkpoint settings %v", c.Settings)
	}
	fresh := iterTrainer(t, train, nil, &dpoptim.IterateAverage{}, 0, nil)
	if err := fresh.Restore(c); !errors.Is(err, training.ErrMismatch) {
		t.Errorf("resuming with an iterate average: %v, want ErrMismatch", err)
	}
	plain := iterTrainer(t, train, nil, nil, 0, nil)
	if err := plain.Restore(c); !errors.Is(err, training.ErrMismatch) {
		t.Errorf("resuming an iterate-average checkpoint without one: %v, want ErrMismatch", err)
	}
	m := newModel(t, models.LogisticRegression(), 32)
	_, err = training.NewTrainer(m, training.TrainerConfig{
		Data:      training.Data{Train: train, Name: "x"},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Schedule:  training.Schedule{BatchSize: 60, Epochs: 1},
		Averaging: training.Averaging{EMA: 0.9, Iterate: &dpoptim.IterateAverage{}},
	})
	if !errors.Is(err, training.ErrConfig) {
		t.Errorf("EMA and iterate average together: %v, want ErrConfig", err)
	}
}
