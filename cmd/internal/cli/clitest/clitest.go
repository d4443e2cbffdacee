// Package clitest makes small checkpoints for the tests of the commands that read them.
package clitest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// MNIST returns a subset of the embedded training digits and the embedded test digits
// (datatest.MNIST).
func MNIST(t testing.TB, n int) (train, test datasets.Dataset) {
	t.Helper()
	return datatest.MNIST(t, n)
}

// Random returns n random images of the given shape with labels 0, 1, … cycling
// (datatest.Random).
func Random(t testing.TB, shape []int, classes, n int) datasets.Dataset {
	t.Helper()
	return datatest.Random(t, shape, classes, n)
}

// Checkpoint trains spec on train for one epoch of non-private SGD (a few steps, a
// model well away from its random start) and saves it as dir/m.ckpt.
func Checkpoint(t testing.TB, dir string, spec nn.Spec, train datasets.Dataset, opts ...nn.Option) string {
	t.Helper()
	return AveragedCheckpoint(t, dir, spec, train, 0, opts...)
}

// AveragedCheckpoint is Checkpoint with parameter averaging of decay ema (TrainerConfig.Averaging.EMA;
// 0: none), so that the checkpoint holds an average besides the raw parameters.
func AveragedCheckpoint(t testing.TB, dir string, spec nn.Spec, train datasets.Dataset, ema float64, opts ...nn.Option) string {
	t.Helper()
	return checkpointLR(t, dir, spec, train, ema, 0.5, opts...)
}

// CheckpointLR is Checkpoint with learning rate lr instead of 0.5: for a network whose
// logits two steps at 0.5 drive so far apart that the softmax saturates (resnet-klause's
// dense layer on 1,024 max-pooled features).
func CheckpointLR(t testing.TB, dir string, spec nn.Spec, train datasets.Dataset, lr float64, opts ...nn.Option) string {
	t.Helper()
	return checkpointLR(t, dir, spec, train, 0, lr, opts...)
}

func checkpointLR(t testing.TB, dir string, spec nn.Spec, train datasets.Dataset, ema, lr float64, opts ...nn.Option) string {
	t.Helper()
	m, err := nn.New(spec, 64, append([]nn.Option{nn.WithSeed(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(2)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:      training.Data{Train: train, Name: "mnist-embedded"},
		Rule:      dpoptim.NewSGD(dpoptim.Constant(lr)),
		Schedule:  training.Schedule{BatchSize: 64, Epochs: 2},
		Seed:      &seed,
		Averaging: training.Averaging{EMA: ema},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return Save(t, tr, filepath.Join(dir, "m.ckpt"))
}

// Save writes tr's checkpoint, as the trainer stands, to path and returns path.
func Save(t testing.TB, tr *training.Trainer, path string) string {
	t.Helper()
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}

// Rewrite loads the checkpoint src, lets edit change it, and saves it as dst (which may
// be src): a checkpoint as an older version, or another run, would have written it.
// It returns dst.
func Rewrite(t testing.TB, src, dst string, edit func(*checkpoint.Training)) string {
	t.Helper()
	c, err := checkpoint.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	edit(c)
	if err := checkpoint.Save(dst, c); err != nil {
		t.Fatal(err)
	}
	return dst
}

// OwnData trains spec (its InputShape, NumClasses and a last Dense layer's units set from the data) on dataset
// (csv:PATH, images:DIR or cifar100 with data) read by cli.LoadData with own, as cmd/train does,
// for ten epochs of non-private SGD, and saves the checkpoint as dir/m.ckpt with the
// settings cmd/train records ("dataset" and own's). It returns the checkpoint's path
// and the trainer's own loss and accuracy on the held-out test split.
func OwnData(t testing.TB, dir string, spec nn.Spec, dataset, data string, own cli.DataFlags) (path string, loss, acc float64) {
	t.Helper()
	train, test, name, _, err := cli.LoadData(dataset, data, &own)
	if err != nil {
		t.Fatal(err)
	}
	spec.InputShape, spec.NumClasses = train.Shape(), train.NumClasses()
	if last, ok := spec.Layers[len(spec.Layers)-1].(layers.Dense); ok { // as cmd/train sizes its models
		last.Units = spec.NumClasses
		spec.Layers = append(spec.Layers[:len(spec.Layers)-1:len(spec.Layers)-1], last)
	}
	m, err := nn.New(spec, 16, nn.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{"dataset": dataset}
	own.Settings(dataset, settings)
	seed := uint64(2)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: train, Test: test, Name: name},
		Settings: settings,
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule: training.Schedule{BatchSize: min(16, train.Len()), Epochs: 10},
		Seed:     &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if loss, acc, err = tr.Evaluate(test); err != nil {
		t.Fatal(err)
	}
	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "m.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path, loss, acc
}

// TableCSV writes dir/table.csv: a header "x1,x2,kind,x3" and n rows of three
// overlapping classes ("a", "b", "c"; the label column is named "kind"), features
// around 2, 5 and 8 by class with noise wide enough that no model separates them and
// some values outside 0:10 (read it with -scale 0:10,0:10,-2:12).
func TableCSV(t testing.TB, dir string, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("x1,x2,kind,x3\n")
	for i := range n {
		k := i % 3
		v := func() string { return strconv.FormatFloat(2+3*float64(k)+5*(rng.Float64()-0.5), 'f', 3, 64) }
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", v(), v(), string(rune('a'+k)), v())
	}
	path := filepath.Join(dir, "table.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ImageFolder writes dir/images with two class folders ("dark", "light") of n PNG
// images each, of sizes that differ (read it with -image-size), colour noise around a
// dark or a light grey.
func ImageFolder(t testing.TB, dir string, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	root := filepath.Join(dir, "images")
	for k, class := range []string{"dark", "light"} {
		if err := os.MkdirAll(filepath.Join(root, class), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			w, h := 9+i%4, 7+(i*3)%5
			img := image.NewRGBA(image.Rect(0, 0, w, h))
			for y := range h {
				for x := range w {
					c := func() uint8 { return uint8(max(0, min(255, 80+100*k+rng.IntN(141)-70))) }
					img.Set(x, y, color.RGBA{c(), c(), c(), 255})
				}
			}
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, class, fmt.Sprintf("%03d.png", i)), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// RunWithTempBudgetStore runs a package's tests (m.Run) with PRIVTRAIN_BUDGET_STORE set to
// a fresh temporary directory's "store" (not yet created), so that no test that trains
// writes the user's real budget store, and returns the exit code for TestMain to pass to
// os.Exit.
func RunWithTempBudgetStore(m *testing.M) int {
	dir, err := os.MkdirTemp("", "privtrain-test-budget-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv(budget.StoreEnv, filepath.Join(dir, "store"))
	return m.Run()
}
