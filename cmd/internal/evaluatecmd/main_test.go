package evaluatecmd

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

func runEvaluate(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// trainerEvaluate is the other code path evaluate's numbers are held to: the trainer's
// own evaluation (training.Trainer.Evaluate) on test of the model nn.LoadModel rebuilds
// from ckpt for physical batch batch (opts as LoadModel's).
func trainerEvaluate(t *testing.T, ckpt string, train, test datasets.Dataset, batch int, opts ...nn.Option) (loss, acc float64) {
	t.Helper()
	m, err := nn.LoadModel(ckpt, batch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := training.NewTrainer(m, training.TrainerConfig{Data: training.Data{Train: train}, Rule: dpoptim.NewSGD(dpoptim.Constant(0.1)), Schedule: training.Schedule{BatchSize: batch, Epochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	loss, acc, err = tr.Evaluate(test)
	if err != nil {
		t.Fatal(err)
	}
	return loss, acc
}

// TestEvaluate checks the metrics against the trainer's own evaluation of the same model
// on the same test set (another code path: training.Trainer.Evaluate) and the confusion matrix
// against the test labels.
func TestEvaluate(t *testing.T) {
	for _, dt := range []nn.DType{nn.Float32, nn.Float64} {
		dir := t.TempDir()
		train, test := clitest.MNIST(t, 512)
		ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train, nn.WithDType(dt))
		r := evaluateJSON(t, "-checkpoint", ckpt, "-json")

		loss, acc := trainerEvaluate(t, ckpt, train, test, 100)
		if math.Abs(r.Accuracy-acc) > 1e-12 || math.Abs(r.Loss-loss) > 1e-5*loss {
			t.Errorf("%v: accuracy %v loss %v, trainer's evaluation %v %v", dt, r.Accuracy, r.Loss, acc, loss)
		}
		if r.Examples != 2000 || r.Dataset != "mnist-embedded" || r.Split != "test" || r.Model != "logreg" {
			t.Errorf("report %+v", r)
		}
		labels := datasets.Labels(test)
		counts := make([]int, 10)
		for _, l := range labels {
			counts[l]++
		}
		diag, total := 0, 0
		for k := range 10 {
			row := 0
			for _, v := range r.ConfusionMatrix[k] {
				row += v
			}
			if row != counts[k] || r.ClassExamples[k] != counts[k] {
				t.Errorf("class %d: row sum %d, examples %d, labels say %d", k, row, r.ClassExamples[k], counts[k])
			}
			if a := r.PerClassAccuracy[k]; a == nil || *a != float64(r.ConfusionMatrix[k][k])/float64(counts[k]) {
				t.Errorf("class %d accuracy %v", k, a)
			}
			diag += r.ConfusionMatrix[k][k]
			total += row
		}
		if diag != r.Correct || total != 2000 || r.Accuracy != float64(diag)/2000 {
			t.Errorf("diagonal %d, correct %d, total %d", diag, r.Correct, total)
		}
		if r.Accuracy < 0.5 {
			t.Errorf("accuracy %v: the model did not train", r.Accuracy)
		}

		code, stdout, _ := runEvaluate("-checkpoint", ckpt)
		if code != 0 || !strings.Contains(stdout, "accuracy") || !strings.Contains(stdout, "2,000 examples") || strings.Count(stdout, "\n") != 17 {
			t.Errorf("text output (exit %d):\n%s", code, stdout)
		}
		_, _, stderr := runEvaluate("-checkpoint", ckpt, "-split", "train")
		if !strings.Contains(stderr, "not covered by ε") {
			t.Errorf("-split train: no note that ε does not cover it: %q", stderr)
		}
	}
}

func TestEvaluateRefuses(t *testing.T) {
	dir := t.TempDir()
	spec := nn.Spec{Name: "tiny", InputShape: []int{1, 8, 8}, NumClasses: 10,
		Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 10}}}
	ckpt := clitest.Checkpoint(t, dir, spec, clitest.Random(t, []int{1, 8, 8}, 10, 128))
	spec3 := nn.Spec{Name: "three", InputShape: []int{1, 28, 28}, NumClasses: 3,
		Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 3}}}
	dir3 := filepath.Join(dir, "3")
	os.Mkdir(dir3, 0o755)
	ckpt3 := clitest.Checkpoint(t, dir3, spec3, clitest.Random(t, []int{1, 28, 28}, 3, 128))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", ckpt}, "-dataset mnist has 1×28×28 examples; the model of " + ckpt + " (tiny) expects 1×8×8"},
		{[]string{"-checkpoint", ckpt3}, "-dataset mnist has 10 classes; the model of " + ckpt3 + " (three) has 3"},
		{[]string{"-checkpoint", ckpt, "-split", "val"}, `-split "val"`},
		{[]string{"-checkpoint", ckpt, "-dataset", "svhn"}, `-dataset "svhn"`},
		{[]string{"-checkpoint", ckpt, "-dataset", "cifar10"}, "-dataset cifar10 needs -data"},
		{[]string{"-checkpoint", ckpt, "-data", filepath.Join(dir, "none")}, "no such file"},
		{[]string{}, "-checkpoint FILE is required"},
		{[]string{"-checkpoint", ckpt, "x"}, `unexpected argument "x"`},
	} {
		code, _, stderr := runEvaluate(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
