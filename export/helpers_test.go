package export_test

import (
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/layers"
	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/internal/num"

	"github.com/privtrain/privtrain/nn"
)

func newModel(t testing.TB, spec nn.Spec, batch int, opts ...nn.Option) *nn.Model {
	t.Helper()
	m, err := nn.New(spec, batch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// randomInput returns rows examples of m's input shape, uniform in [0, 1).
func randomInput(m *nn.Model, rows int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 3))
	x := make([]float32, rows*num.Prod(m.InputShape()))
	for i := range x {
		x[i] = rng.Float32()
	}
	return x
}

// randomParams sets m's parameters to N(0, 0.1²) values and returns them (rounded to the
// model's dtype).
func randomParams(t testing.TB, m *nn.Model, seed uint64) []float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	p := make([]float64, m.NumParams())
	for i := range p {
		p[i] = rng.NormFloat64() * 0.1
	}
	if err := m.SetParams(p); err != nil {
		t.Fatal(err)
	}
	m.Params(p) // rounded to the model's dtype
	return p
}

// logitsOf runs m on x (one physical batch) and returns the logits.
func logitsOf(t testing.TB, m *nn.Model, x []float32) []float64 {
	t.Helper()
	out := make([]float64, m.BatchSize()*m.NumClasses())
	if err := m.Logits(nn.Batch{X: x}, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// myTanh is a custom layer (outside package layers) without a PyTorch equivalent.
type myTanh struct{ Note string }

func (myTanh) Kind() string                        { return "mytanh" }
func (myTanh) OutputShape(in []int) ([]int, error) { return in, nil }
func (myTanh) Params([]int) []layers.ParamSpec     { return nil }
func (myTanh) Apply(x *G.Node, _ []*G.Node) (*G.Node, *layers.Tap, error) {
	y, err := G.Tanh(x)
	return y, nil, err
}

func customSpec(act layers.Layer) nn.Spec {
	return nn.Spec{Name: "custom", InputShape: []int{1, 3, 3}, NumClasses: 3,
		Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 4, Init: layers.HeNormal{}}, act, layers.Dense{Units: 3, NoBias: true}}}
}
