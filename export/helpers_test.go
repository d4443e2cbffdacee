package export_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/export"
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

// pytorchLogits exports m (TorchFile, PyTorchFile) to a temporary directory, runs the
// written Python module on rows random inputs (randomInput with seed) in /usr/bin/python3
// and returns its logits and ours, row after row. It skips the test with -short or
// without torch and numpy there.
func pytorchLogits(t *testing.T, m *nn.Model, rows int, seed uint64) (theirs, ours []float64) {
	t.Helper()
	const python = "/usr/bin/python3"
	if testing.Short() || exec.Command(python, "-c", "import torch, numpy").Run() != nil {
		t.Skip("no PyTorch run (-short, or no /usr/bin/python3 with torch and numpy)")
	}
	dir := t.TempDir()
	if err := export.TorchFile(filepath.Join(dir, "m.safetensors"), m); err != nil {
		t.Fatal(err)
	}
	if err := export.PyTorchFile(filepath.Join(dir, "m.py"), m, "m", "m.safetensors"); err != nil {
		t.Fatal(err)
	}
	x := randomInput(m, rows, seed)
	ours = logitsOf(t, m, x)
	x64 := make([]float64, len(x))
	for k, v := range x {
		x64[k] = float64(v)
	}
	write(t, filepath.Join(dir, "x"), x64)
	script := fmt.Sprintf(`import importlib.util, json, numpy as np, torch
spec = importlib.util.spec_from_file_location("m", %q)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
model = mod.load_model()
x = torch.from_numpy(np.fromfile(%q, dtype="<f8").reshape((%d,) + mod.INPUT_SHAPE))
with torch.no_grad():
    print(json.dumps(model(x).numpy().ravel().tolist()))
`, filepath.Join(dir, "m.py"), filepath.Join(dir, "x"), rows)
	out, err := exec.Command(python, "-c", script).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := json.Unmarshal(out, &theirs); err != nil || len(theirs) != len(ours) {
		t.Fatalf("PyTorch printed %s (%v)", out, err)
	}
	return theirs, ours
}
