// Package clitest makes small checkpoints for the tests of the commands that read them.
package clitest

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn"
)

// MNIST returns a subset of the embedded training digits and the embedded test digits.
func MNIST(t testing.TB, n int) (train, test datasets.Dataset) {
	t.Helper()
	tr, te, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	sub, err := datasets.StratifiedSubset(tr, n)
	if err != nil {
		t.Fatal(err)
	}
	return sub, te
}

// Random returns n random images of the given shape with labels 0, 1, … cycling.
func Random(t testing.TB, shape []int, classes, n int) datasets.Dataset {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	size := 1
	for _, s := range shape {
		size *= s
	}
	px := make([]byte, n*size)
	for i := range px {
		px[i] = byte(rng.IntN(256))
	}
	labels := make([]byte, n)
	for i := range labels {
		labels[i] = byte(i % classes)
	}
	ds, err := datasets.NewImages(shape, classes, px, labels)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// Checkpoint trains spec on train for one epoch of non-private SGD (a few steps, a
// model well away from its random start) and saves it as dir/m.ckpt.
func Checkpoint(t testing.TB, dir string, spec nn.Spec, train datasets.Dataset, opts ...nn.Option) string {
	t.Helper()
	m, err := nn.New(spec, 64, append([]nn.Option{nn.WithSeed(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(2)
	tr, err := nn.NewTrainer(m, nn.TrainerConfig{Train: train, DatasetName: "mnist-embedded",
		Rule: dpoptim.NewSGD(dpoptim.Constant(0.5)), BatchSize: 64, Epochs: 2, Seed: &seed})
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
	path := filepath.Join(dir, "m.ckpt")
	if err := nn.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}
