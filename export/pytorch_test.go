package export_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/scatter"
)

// TestPyTorchScattering holds the Scattering2D class of the Python module (torch.fft on
// the exported filters) to package scatter's transform in float64, to 1e-13, for settings
// that exercise every path: T&B's J = 2, L = 8 on both image sizes, three scales (two j2
// for one j1) on several channels and a non-square image, one scale on an image so small
// that the padding reflects more than once. It needs /usr/bin/python3 with torch and
// numpy and skips without them, or with -short.
func TestPyTorchScattering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PyTorch")
	}
	const python = "/usr/bin/python3"
	if exec.Command(python, "-c", "import torch, numpy").Run() != nil {
		t.Skipf("%s has no torch and numpy", python)
	}
	dir := t.TempDir()
	var script strings.Builder
	script.WriteString("import importlib.util, numpy as np, torch\n")
	const n = 3
	for i, c := range []struct{ J, L, C, H, W int }{{2, 8, 1, 28, 28}, {2, 8, 3, 32, 32}, {3, 4, 2, 16, 20}, {1, 3, 1, 2, 5}} {
		spec := nn.Spec{Name: "s", InputShape: []int{c.C, c.H, c.W}, NumClasses: 2,
			Layers: []layers.Layer{layers.Scattering2D{J: c.J, L: c.L}, layers.Flatten{}, layers.Dense{Units: 2}}}
		m := newModel(t, spec, 1)
		base := filepath.Join(dir, fmt.Sprintf("s%d", i))
		if err := export.TorchFile(base+".safetensors", m); err != nil {
			t.Fatal(err)
		}
		if err := export.PyTorchFile(base+".py", m, "s", filepath.Base(base)+".safetensors"); err != nil {
			t.Fatal(err)
		}
		x := randomInput(m, n, uint64(i))
		x64 := make([]float64, len(x))
		for k, v := range x {
			x64[k] = float64(v)
		}
		s, err := scatter.New(c.J, c.L, c.H, c.W)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.Transform64(x64, c.C)
		if err != nil {
			t.Fatal(err)
		}
		write(t, base+".x", x64)
		write(t, base+".want", want)
		fmt.Fprintf(&script, `spec = importlib.util.spec_from_file_location("s%[1]d", %[2]q)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
sc = mod.load_model()[0]
x = torch.from_numpy(np.fromfile(%[2]q[:-3] + ".x", dtype="<f8").reshape((%[3]d,) + mod.INPUT_SHAPE))
got = sc.features64(x).numpy().ravel()
want = np.fromfile(%[2]q[:-3] + ".want", dtype="<f8")
d = np.abs(got - want).max() if got.shape == want.shape else float("inf")
print("J=%[4]d L=%[5]d %[6]dx%[7]dx%[8]d: %%d features, max |torch - scatter| = %%.3g (largest %%.3g)" %% (want.size, d, np.abs(want).max()))
assert d <= 1e-13, d
`, i, base+".py", n, c.J, c.L, c.C, c.H, c.W)
	}
	out, err := exec.Command(python, "-c", script.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("\n%s", out)
}

func write(t *testing.T, path string, v []float64) {
	t.Helper()
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
