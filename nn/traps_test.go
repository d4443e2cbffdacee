package nn

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
)

// The Gorgonia v0.9.18 traps of gorgonia-notes.md, each shown in raw Gorgonia (so that a
// Gorgonia upgrade that fixes one is noticed) and then shown not to affect Model. The
// asymmetric pool padding trap is in layers (TestTrapAsymmetricPoolPadding).

func vector(g *G.ExprGraph, v ...float64) *G.Node {
	return G.NewVector(g, tensor.Float64, G.WithShape(len(v)), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking(v))))
}

// TestTrapStaleSecondGradient: derivatives are cached on nodes, so a second Grad through
// a node the first one visited returns the first gradient.
func TestTrapStaleSecondGradient(t *testing.T) {
	g := G.NewGraph()
	x := vector(g, 1, 2)
	h := G.Must(G.Square(x))
	if _, err := G.Grad(G.Must(G.Sum(h)), x); err != nil { // d/dx Σ x² = 2x = (2, 4)
		t.Fatal(err)
	}
	second, err := G.Grad(G.Must(G.Sum(G.Must(G.Mul(h, G.NewConstant(3.0))))), x) // d/dx Σ 3x² = 6x
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := second[0].Value().Data().([]float64)
	if got[0] == 6 && got[1] == 12 {
		t.Fatal("second Grad is right now (6, 12); the stale-gradient trap may be fixed")
	}
	if got[0] != 2 || got[1] != 4 {
		t.Fatalf("second Grad %v, expected the stale first gradient (2, 4)", got)
	}

	// Model calls Backpropagate once per graph; successive batches each get their own
	// gradient, checked against the closed form of softmax regression.
	m, spec := newSoftmaxRegression(t, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		x, labels := randomInputs(rng, spec, 4)
		got := make([]float64, m.NumParams())
		if _, err := m.Gradient(Batch{X: x, Labels: labels}, got); err != nil {
			t.Fatal(err)
		}
		p := make([]float64, m.NumParams())
		m.Params(p)
		_, want := softmaxRegressionGradient(p, x, labels, 5, 3)
		assertClose(t, "gradient of a later batch", got, want, 1e-13)
	}
}

// TestTrapSoftMaxLogSoftMaxMerge: SoftMax(x) and LogSoftMax(x) hash alike, so the graph
// keeps one node and LogSoftMax returns probabilities. A second trap in the same op:
// LogSoftMax shifts every row by the first row's first value, not the row's maximum, so a
// row far above it overflows.
func TestTrapSoftMaxLogSoftMaxMerge(t *testing.T) {
	g := G.NewGraph()
	z := G.NewMatrix(g, tensor.Float64, G.WithShape(1, 3), G.WithName("z"),
		G.WithValue(tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]float64{1, 2, 3}))))
	s := G.Must(G.SoftMax(z))
	ls := G.Must(G.LogSoftMax(z))
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := ls.Value().Data().([]float64)
	if s != ls || got[2] <= 0 {
		t.Fatalf("LogSoftMax gives %v next to SoftMax; the merge trap may be fixed", got)
	}

	g2 := G.NewGraph()
	z2 := G.NewMatrix(g2, tensor.Float64, G.WithShape(2, 2), G.WithName("z"),
		G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0, 0, 1000, 0}))))
	ls2 := G.Must(G.LogSoftMax(z2))
	vm2 := G.NewTapeMachine(g2)
	defer vm2.Close()
	if err := vm2.RunAll(); err != nil {
		t.Fatal(err)
	}
	if row := ls2.Value().Data().([]float64)[2:]; !math.IsInf(row[0], -1) {
		t.Fatalf("LogSoftMax of (1000, 0) is %v; the row-shift trap may be fixed (want (0, −1000))", row)
	}

	// Model: no softmax node in either Gorgonia graph, and on both engines the loss of
	// logits far apart is exact.
	for _, engine := range []Engine{EngineGorgonia, EngineNative} {
		m, _ := newSoftmaxRegression(t, 2, WithEngine(engine))
		if engine == EngineGorgonia {
			for _, gr := range []*graph[float64]{m.net.(*net[float64]).train, m.net.(*net[float64]).eval} {
				for _, n := range gr.g.AllNodes() {
					if n.Op() != nil && strings.Contains(strings.ToLower(n.Op().String()), "softmax{") {
						t.Fatalf("graph holds Gorgonia softmax node %v", n)
					}
				}
			}
		}
		// Weights that put logits (1000, 0, −1000) for input e₀ = (1, 0, 0, 0, 0).
		p := make([]float64, m.NumParams())
		p[0], p[2] = 1000, -1000
		if err := m.SetParams(p); err != nil {
			t.Fatal(err)
		}
		x := make([]float32, 10)
		x[0], x[5] = 1, 1
		loss, correct, err := m.Evaluate(Batch{X: x, Labels: []int{0, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if loss != 1000 || correct != 1 {
			t.Fatalf("%v: loss %v correct %d, want 0 + 1000 and 1", engine, loss, correct)
		}
	}
}

// TestTrapAccumulatingDualValues: gradients bound with BindDualValues add up across runs.
func TestTrapAccumulatingDualValues(t *testing.T) {
	g := G.NewGraph()
	x := vector(g, 1, 2)
	if _, err := G.Grad(G.Must(G.Sum(G.Must(G.Square(x)))), x); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(x))
	defer vm.Close()
	var got []float64
	for range 2 {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		d, err := x.Grad()
		if err != nil {
			t.Fatal(err)
		}
		got = d.Data().([]float64)
	}
	if got[0] != 4 || got[1] != 8 {
		t.Fatalf("second run's gradient %v; expected the accumulated 2·(2, 4) — the trap may be fixed", got)
	}

	// Model binds no dual values: the same batch twice gives bit-identical gradients, and
	// accumulation happens only in the caller's buffer, where it is asked for.
	m, spec := newSoftmaxRegression(t, 3)
	xs, labels := randomInputs(rand.New(rand.NewPCG(3, 4)), spec, 3)
	b := Batch{X: xs, Labels: labels}
	var first []float64
	for run := range 3 {
		g := make([]float64, m.NumParams())
		if _, err := m.ClippedGradient(b, clipping.Flat{C: 0.1}, g); err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			first = g
			continue
		}
		for j := range g {
			if g[j] != first[j] {
				t.Fatalf("run %d: entry %d = %v, first run %v", run, j, g[j], first[j])
			}
		}
	}
}

// TestTrapReadOfViewOverwritten: after Tanh → Reshape (Flatten), the Reshape's value is a
// view of Tanh's output, and the backward pass computes Tanh's derivative in place in that
// memory, so a Read of the Reshape node sees the clobbered values, not tanh(x). The
// Gorgonia engine therefore takes dense inputs from its forward-only graph; models'
// TestEnginesAgree checks both engines on such a network.
func TestTrapReadOfViewOverwritten(t *testing.T) {
	g := G.NewGraph()
	xv := []float64{0.5, -1, 2, 0.25, -0.75, 1.5}
	x := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(append([]float64(nil), xv...)))))
	w := G.NewMatrix(g, tensor.Float64, G.WithShape(6, 1), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(6, 1), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))))
	th := G.Must(G.Tanh(x))
	flat := G.Must(G.Reshape(th, tensor.Shape{1, 6}))
	z := G.Must(G.Mul(flat, w))
	loss := G.Must(G.Sum(z))
	one := g.AddNode(G.NewConstant(1.0))
	if _, err := G.Backpropagate(G.Nodes{loss}, G.Nodes{one}, G.Nodes{x}); err != nil {
		t.Fatal(err)
	}
	read := new(G.Value)
	*read = tensor.New(tensor.WithShape(1, 6), tensor.Of(tensor.Float64))
	G.Read(flat, read)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := (*read).Data().([]float64)
	clobbered := false
	for j, v := range xv {
		if math.Abs(got[j]-math.Tanh(v)) > 1e-12 {
			clobbered = true
		}
	}
	if !clobbered {
		t.Fatalf("Read after Tanh → Reshape returned tanh(x) = %v; the trap may be fixed", got)
	}
}
