package export_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/smoothing"
)

// The default axes per layer type: a Dense weight [in, out] along its inputs, every
// other tensor (conv weight and bias, dense bias) in storage order.
func TestSmoothingAxesPerLayerType(t *testing.T) {
	m, err := nn.New(exportSpec(), 1, nn.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]smoothing.Axis{
		"conv1.weight": smoothing.Flat(), "conv1.bias": smoothing.Flat(),
		"dense1.weight": smoothing.Along(0), "dense1.bias": smoothing.Flat(),
		"dense2.weight": smoothing.Along(0), "dense2.bias": smoothing.Flat(),
	}
	layout, axes := m.Layout(), m.SmoothingAxes()
	if len(axes) != len(layout) {
		t.Fatalf("%d axes for %d tensors", len(axes), len(layout))
	}
	for i, p := range layout {
		if w, ok := want[p.Name]; !ok || axes[i] != w {
			t.Errorf("%s %v: axis %v, want %v", p.Name, p.Shape, axes[i], w)
		}
	}
}

// The default axes smooth every tensor as the DP-LSSGD authors' code does in PyTorch:
// each tensor of the PyTorch export (nn.Linear weights [out, in]) flattened row-major and
// divided by the eigenvalues in Fourier space. Checked by exporting a vector before and
// after smoothing it in our layout.
func TestSmoothingAxesAreThePaperCode(t *testing.T) {
	const sigma = 1.0
	m, err := nn.New(exportSpec(), 1, nn.WithSeed(2), nn.WithDType(nn.Float64))
	if err != nil {
		t.Fatal(err)
	}
	var layout []smoothing.Tensor
	for _, p := range m.Layout() {
		layout = append(layout, smoothing.Tensor{Name: p.Name, Shape: p.Shape})
	}
	lap, err := smoothing.NewLaplacian[float64](sigma, layout, smoothing.Axes(m.SmoothingAxes()...))
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, m.NumParams())
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range g {
		g[i] = rng.NormFloat64()
	}
	export := func() map[string]*stTensor {
		t.Helper()
		if err := m.SetParams(g); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := export.Torch(&buf, m); err != nil {
			t.Fatal(err)
		}
		st, _ := parseSafetensors(t, buf.Bytes())
		return st
	}
	raw := export()
	if err := lap.Smooth(g); err != nil {
		t.Fatal(err)
	}
	smoothed := export()
	if len(raw) != 6 {
		t.Fatalf("%d exported tensors, want 6", len(raw))
	}
	for name, r := range raw {
		f, err := smoothing.NewFFTSolver(len(r.values), sigma)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(r.values))
		if err := f.Solve(want, r.values); err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if got := smoothed[name].values[i]; math.Abs(got-w) > 1e-12 {
				t.Errorf("%s %v: value %d is %v, the authors' smoothing of the PyTorch tensor gives %v", name, r.Shape, i, got, w)
				break
			}
		}
	}
}
