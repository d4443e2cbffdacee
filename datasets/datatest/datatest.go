// Package datatest makes small data sets for tests: a stratified subset of the embedded
// MNIST sample, and random images with cycling labels.
package datatest

import (
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
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

// Saturated is ds with every value 255 and the labels kept: data that a fingerprint of
// the labels alone takes for ds.
type Saturated struct{ datasets.Dataset }

// Example writes example i of ds with every value set to 255 and returns its label.
func (s Saturated) Example(i int, dst []float32) int {
	l := s.Dataset.Example(i, dst)
	for j := range dst {
		dst[j] = 255
	}
	return l
}
