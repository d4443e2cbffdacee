package evaluatecmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// A checkpoint of a run with parameter averaging is evaluated with the average by
// default and with the last iterate with -params raw; each matches the trainer's own
// evaluation of those parameters, and the two differ.
func TestEvaluateParams(t *testing.T) {
	train, test := clitest.MNIST(t, 512)
	m, err := nn.New(models.LogisticRegression(), 64, nn.WithSeed(1), nn.WithDType(nn.Float64))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(2)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:      training.Data{Train: train, Name: "mnist-embedded"},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule:  training.Schedule{BatchSize: 64, Epochs: 2},
		Seed:      &seed,
		Averaging: training.Averaging{EMA: 0.8},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "ema.ckpt")
	if err := checkpoint.Save(ckpt, c); err != nil {
		t.Fatal(err)
	}
	evalWith := func(p []float64) (float64, float64) {
		ref, err := training.NewTrainer(tr.Model(), training.TrainerConfig{Data: training.Data{Train: train}, Rule: dpoptim.NewSGD(dpoptim.Constant(1)), Schedule: training.Schedule{BatchSize: 64, Epochs: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Model().SetParams(p); err != nil {
			t.Fatal(err)
		}
		l, a, err := ref.Evaluate(test)
		if err != nil {
			t.Fatal(err)
		}
		return l, a
	}
	rawLoss, rawAcc := evalWith(c.Params)
	avgLoss, avgAcc := evalWith(c.EMAParams)
	if rawLoss == avgLoss {
		t.Fatal("raw and averaged parameters have the same loss; the test shows nothing")
	}
	for _, tc := range []struct {
		args      []string
		which     string
		ema       float64
		loss, acc float64
	}{{nil, "averaged", 0.8, avgLoss, avgAcc}, {[]string{"-params", "averaged"}, "averaged", 0.8, avgLoss, avgAcc}, {[]string{"-params", "raw"}, "raw", 0, rawLoss, rawAcc}} {
		r := evaluateJSON(t, append([]string{"-checkpoint", ckpt, "-json"}, tc.args...)...)
		if r.Parameters != tc.which || r.EMA != tc.ema || r.Accuracy != tc.acc || !(abs(r.Loss-tc.loss) <= 1e-12*tc.loss) {
			t.Errorf("%v: %s (ema %v), accuracy %v, loss %v; want %s, %v, %v", tc.args, r.Parameters, r.EMA, r.Accuracy, r.Loss, tc.which, tc.acc, tc.loss)
		}
	}
	_, stdout, _ := runEvaluate("-checkpoint", ckpt)
	if !strings.Contains(stdout, "parameters averaged (EMA β = 0.8)") {
		t.Errorf("text output does not say which parameters:\n%s", stdout)
	}
	code, _, stderr := runEvaluate("-checkpoint", ckpt, "-params", "last")
	if code != 2 || !strings.Contains(stderr, "-params") {
		t.Errorf("-params last: exit %d, %q", code, stderr)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
