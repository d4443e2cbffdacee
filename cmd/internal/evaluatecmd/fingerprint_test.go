package evaluatecmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// The training part that evaluate -split train rebuilds for a run trained with
// -validation must have the checkpoint's content fingerprint, not only its labels: a
// checkpoint trained on the same labels with every pixel 255 is refused on the real
// data; one without content_sha256 (older) is compared on the labels only.
func TestEvaluateValidationContent(t *testing.T) {
	all, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	rest, _, err := datasets.HoldOut(all, 0.2, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.New(models.LogisticRegression(), 256, nn.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: datatest.Saturated{Dataset: rest}, Name: "mnist-embedded"},
		Settings: map[string]string{"dataset": "mnist", "validation": "0.2", "split-seed": "3"},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule: training.Schedule{BatchSize: 256, Epochs: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	ckpt := clitest.Save(t, tr, filepath.Join(t.TempDir(), "v.ckpt"))
	code, _, stderr := runEvaluate("-checkpoint", ckpt, "-split", "train")
	if code != 2 || !strings.Contains(stderr, "other examples") {
		t.Errorf("-split train of a run on other pixels with the same labels: exit %d, %q", code, stderr)
	}
	clitest.Rewrite(t, ckpt, ckpt, func(c *checkpoint.Training) { c.Dataset.Content = "" })
	if code, _, stderr := runEvaluate("-checkpoint", ckpt, "-split", "train"); code != 0 {
		t.Errorf("-split train of a checkpoint without content_sha256: exit %d, %q", code, stderr)
	}
}
