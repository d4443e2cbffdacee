package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
)

// applied is one layer applied to random float64 input in a fresh graph and run forward.
type applied struct {
	x      []float64   // input, [B, in...]
	params [][]float64 // parameter values in ParamSpec order (layout shapes)
	out    []float64   // layer output
	outDim []int       // output node shape
	tapIn  []float64   // value of the tap's In node (nil without a tap)
	tap    *Tap
}

func randomValues(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// runLayer builds x → layer on a batch of b examples of per-example shape in.
func runLayer(t *testing.T, l Layer, b int, in []int, rng *rand.Rand) applied {
	t.Helper()
	if _, err := l.OutputShape(in); err != nil {
		t.Fatal(err)
	}
	g := G.NewGraph()
	shape := append([]int{b}, in...)
	res := applied{x: randomValues(rng, num.Prod(shape))}
	x := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), res.x...)))))
	var nodes []*G.Node
	for _, p := range l.Params(in) {
		v := randomValues(rng, num.Prod(p.Shape))
		res.params = append(res.params, v)
		gs := p.GraphShape()
		nodes = append(nodes, G.NewTensor(g, tensor.Float64, len(gs), G.WithShape(gs...), G.WithName(p.Name),
			G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(append([]float64(nil), v...))))))
	}
	y, tap, err := l.Apply(x, nodes)
	if err != nil {
		t.Fatal(err)
	}
	res.tap = tap
	var tapIn G.Value
	if tap != nil {
		G.Read(tap.In, &tapIn)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	res.out = append([]float64(nil), y.Value().Data().([]float64)...)
	res.outDim = y.Shape().Clone()
	if tapIn != nil {
		res.tapIn = append([]float64(nil), tapIn.Data().([]float64)...)
	}
	want, err := l.OutputShape(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.outDim; len(got) != len(want)+1 || got[0] != b || num.Prod(got[1:]) != num.Prod(want) {
		t.Fatalf("%s: output node shape %v, OutputShape %v", l.Kind(), got, want)
	}
	return res
}

func assertNear(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol || math.IsNaN(got[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// padded reads x[b, c, r, q] of a [B, C, H, W] array, 0 outside (zero padding).
func padded(x []float64, C, H, W, b, c, r, q int) (float64, bool) {
	if r < 0 || r >= H || q < 0 || q >= W {
		return 0, false
	}
	return x[((b*C+c)*H+r)*W+q], true
}
