package privacycmd

import (
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// blankDigits is a stand-in MNIST training set of n blank images: the trainer's plan
// depends only on its size.
type blankDigits struct{ n int }

func (d blankDigits) Len() int                         { return d.n }
func (d blankDigits) Shape() []int                     { return []int{1, 28, 28} }
func (d blankDigits) NumClasses() int                  { return 10 }
func (d blankDigits) Example(i int, dst []float32) int { clear(dst); return i % 10 }

// TestNoiseMeetsTheTrainersPlan: the z that "privacy noise" prints for a plan of n, b
// and epochs is enough for the plan the trainer runs with those settings — same steps,
// ε within the target (the issue: 14,063 planned steps against 14,100 run, ε = 3.004).
func TestNoiseMeetsTheTrainersPlan(t *testing.T) {
	for _, c := range []struct {
		n, batch, epochs int
		eps              float64
	}{
		{60000, 256, 60, 3},
		{8000, 2048, 30, 3},
		{50000, 300, 7, 1},
	} {
		r := runJSON(t, "noise", "-n", itoa(c.n), "-batch", itoa(c.batch), "-epochs", itoa(c.epochs),
			"-epsilon", formatFloat(c.eps), "-delta", "1e-5")
		m, err := nn.New(models.LogisticRegression(), 16)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := training.NewTrainer(m, training.TrainerConfig{
			Data:     training.Data{Train: blankDigits{c.n}},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(1)),
			Schedule: training.Schedule{BatchSize: c.batch, Epochs: c.epochs},
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: r.NoiseMultiplier, TargetEpsilon: c.eps, Delta: 1e-5},
		})
		if err != nil {
			t.Fatalf("n %d, b %d, %d epochs: the trainer refuses z = %v from privacy noise: %v", c.n, c.batch, c.epochs, r.NoiseMultiplier, err)
		}
		p := tr.Plan()
		if p.Steps != r.Steps {
			t.Errorf("n %d, b %d, %d epochs: privacy plans %d steps, the trainer runs %d", c.n, c.batch, c.epochs, r.Steps, p.Steps)
		}
		if p.Spent.Epsilon > c.eps {
			t.Errorf("n %d, b %d, %d epochs: the trainer's plan spends ε = %v > %v at z = %v", c.n, c.batch, c.epochs, p.Spent.Epsilon, c.eps, r.NoiseMultiplier)
		}
	}
}

func itoa(n int) string { return formatFloat(float64(n)) }
