package training_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// Front-end test fixtures, as nn's front-end tests have them.

// scatterSpec is Scattering2D{J: 1, L: 4} on 1×8×8 images (1 + 1·4 = 5 channels of 4×4),
// GroupNorm without affine parameters, and a dense layer to 3 classes.
func scatterSpec() nn.Spec {
	return nn.Spec{Name: "scatter-test", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		layers.Scattering2D{J: 1, L: 4}, layers.GroupNorm{Groups: 5, NoAffine: true}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
}

func randomGrays(t *testing.T, rng *rand.Rand, n int) *datasets.Images {
	t.Helper()
	pix, lab := make([]byte, n*64), make([]byte, n)
	for i := range pix {
		pix[i] = byte(rng.IntN(256))
	}
	for i := range lab {
		lab[i] = byte(rng.IntN(3))
	}
	ds, err := datasets.NewImages([]int{1, 8, 8}, 3, pix, lab)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// counting is a fixed front end that doubles its input and counts the examples it
// transformed, to show the trainer transforms each example once.
type counting struct{ n *atomic.Int64 }

func (counting) Kind() string                        { return "double" }
func (counting) OutputShape(in []int) ([]int, error) { return in, nil }
func (counting) Params([]int) []layers.ParamSpec     { return nil }
func (counting) Apply(x *G.Node, _ []*G.Node) (*G.Node, *layers.Tap, error) {
	y, err := G.Add(x, x)
	return y, nil, err
}
func (c counting) NewTransform(in []int) (func([]float32) ([]float32, error), error) {
	L := 1
	for _, d := range in {
		L *= d
	}
	return func(x []float32) ([]float32, error) {
		c.n.Add(int64(len(x) / L))
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = 2 * v
		}
		return y, nil
	}, nil
}
