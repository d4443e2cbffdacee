package main

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// tinyImages is n random 28×28 digits with random labels of 10 classes.
func tinyImages(t *testing.T, n int, seed uint64) *datasets.Images {
	r := rand.New(rand.NewPCG(seed, 1))
	px, lb := make([]byte, n*784), make([]byte, n)
	for i := range px {
		px[i] = byte(r.IntN(256))
		lb[i/784] = byte(r.IntN(10))
	}
	ds, err := datasets.NewImages([]int{1, 28, 28}, 10, px, lb)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// runTiny trains the softmax regression for 3 epochs of 3 shuffled steps (n = 300,
// batch 128: ⌈300/128⌉ = 3) with per-example clipping and z = 1, and returns the result;
// cb is the run's OnEpoch.
func runTiny(t *testing.T, cb func(training.EpochMetrics) error) training.Result {
	seed := uint64(7)
	m, err := nn.New(models.LogisticRegression(), 128, nn.WithSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Callbacks: training.Callbacks{OnEpoch: cb},
		Data:      training.Data{Train: tinyImages(t, 300, 1), Test: tinyImages(t, 100, 2), Name: "tiny"},
		Rule:      dpoptim.NewSGD(epochInverseTime{a: 2, stepsPerEpoch: 3}),
		Privacy:   &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5},
		Schedule:  training.Schedule{BatchSize: 128, Epochs: 3, Sampling: training.Shuffle},
		Seed:      &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// -curves writes one line per epoch: epoch e after 3·e steps (⌈n/b⌉ per epoch), the
// run's columns first, the last line's test accuracy the run's final one; and writing the
// curve is post-processing: the run's result is bit-identical without it.
func TestCurveWriter(t *testing.T) {
	var buf bytes.Buffer
	res := runTiny(t, curveWriter(&buf, "0.10", 30.5, "dp-sgd", 3, 7, 2))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (one per epoch):\n%s", len(lines), buf.String())
	}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 11 {
			t.Fatalf("line %d has %d fields, want 11: %q", i, len(f), l)
		}
		// σ is 0 for DP-SGD whatever the arm's σ.
		if got := strings.Join(f[:6], " "); got != "0.10 30.5000 dp-sgd 0 7 2" {
			t.Errorf("line %d starts %q", i, got)
		}
		if f[6] != strconv.Itoa(i+1) || f[7] != strconv.Itoa(3*(i+1)) {
			t.Errorf("line %d: epoch %s step %s, want %d and %d", i, f[6], f[7], i+1, 3*(i+1))
		}
		for _, j := range []int{8, 9} {
			v, err := strconv.ParseFloat(f[j], 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("line %d field %d = %q: want a positive loss", i, j, f[j])
			}
		}
	}
	last := strings.Split(lines[2], "\t")
	if want := strconv.FormatFloat(100*res.TestAccuracy, 'f', 2, 64); last[10] != want {
		t.Errorf("last test accuracy %s, the run's %s", last[10], want)
	}
	plain := runTiny(t, nil)
	if plain.TestAccuracy != res.TestAccuracy || plain.TestLoss != res.TestLoss {
		t.Errorf("with the curve: accuracy %v loss %v; without: %v %v", res.TestAccuracy, res.TestLoss, plain.TestAccuracy, plain.TestLoss)
	}
}
