package evaluatecmd

import (
	"math"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

// TestEvaluateFocal: a checkpoint of a model trained with the focal loss is evaluated
// with that loss (the trainer's own evaluation of the model nn.LoadModel rebuilds, which
// takes the loss from the checkpoint: what train reports as test_loss), and the mean
// cross-entropy is reported beside it (the trainer's evaluation of the same model with
// WithLoss(CrossEntropy)).
func TestEvaluateFocal(t *testing.T) {
	train, test := clitest.MNIST(t, 512)
	ckpt := clitest.Checkpoint(t, t.TempDir(), models.LogisticRegression(), train, nn.WithDType(nn.Float64), nn.WithLoss(nn.Focal(2)))
	r := evaluateJSON(t, "-checkpoint", ckpt, "-json")
	focal, _ := trainerEvaluate(t, ckpt, train, test, 100)
	ce, _ := trainerEvaluate(t, ckpt, train, test, 100, nn.WithLoss(nn.CrossEntropy))
	if r.LossFunction != "focal:2" || r.CrossEntropy == nil {
		t.Fatalf("loss_function %q, cross_entropy %v; want focal:2 and a value", r.LossFunction, r.CrossEntropy)
	}
	if math.Abs(r.Loss-focal) > 1e-12*focal || math.Abs(*r.CrossEntropy-ce) > 1e-12*ce || !(focal < ce) {
		t.Errorf("loss %v, cross-entropy %v; trainer's evaluation %v, %v", r.Loss, *r.CrossEntropy, focal, ce)
	}
	code, stdout, _ := runEvaluate("-checkpoint", ckpt)
	if code != 0 || !strings.Contains(stdout, "mean focal loss (γ = 2)") || !strings.Contains(stdout, "(mean cross-entropy)") {
		t.Errorf("text output (exit %d):\n%s", code, stdout)
	}
}
