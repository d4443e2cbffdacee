package export_test

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
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

// checkTorchLogits compares, for each of the rows examples of x, the logits that forward
// (PyTorch's forward pass written out in float64 on the exported tensors) gives with ours
// (len(ours)/rows logits an example), to within tol; theirs names forward in the message.
func checkTorchLogits(t *testing.T, dt nn.DType, rows int, theirs string, x []float32, ours []float64, tol float64, forward func([]float64) []float64) {
	t.Helper()
	size, classes := len(x)/rows, len(ours)/rows
	for i := range rows {
		ex := make([]float64, size)
		for j := range ex {
			ex[j] = float64(x[i*size+j])
		}
		got := forward(ex)
		for k := range classes {
			if d := math.Abs(got[k] - ours[i*classes+k]); d > tol {
				t.Errorf("%v example %d logit %d: %s %v, our model %v", dt, i, k, theirs, got[k], ours[i*classes+k])
			}
		}
	}
}
