package export_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// TestExportWhitened: a model starting with a Whitened layer (scatter-prior-linear in
// small) exports as a Whitened module around its base modules, with the scattering's
// filters ("0.base.0.psi_0", …) and the map ("0.map", d × d) as buffers, and, where
// /usr/bin/python3 has torch, the written Python module's logits equal ours to 1e-4
// relative (a front end computes its features in float32 whatever the model's dtype; the
// module's scattering runs in float64).
func TestExportWhitened(t *testing.T) {
	t.Setenv(prior.CacheEnv, t.TempDir())
	spec := nn.Spec{Name: "whitened-export", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		layers.Whitened{
			Base:  []layers.Layer{layers.Scattering2D{J: 1, L: 2}, layers.GroupNorm{Groups: 1, NoAffine: true}, layers.Flatten{}},
			Prior: prior.DeadLeaves{Scenes: 200, Seed: 3},
			Floor: 0.01,
		},
		layers.Dense{Units: 3},
	}}
	m := newModel(t, spec, 4, nn.WithDType(nn.Float64))
	theta := make([]float64, m.NumParams())
	rng := rand.New(rand.NewPCG(3, 9))
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	if err := m.SetParams(theta); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := export.Torch(&buf, m); err != nil {
		t.Fatal(err)
	}
	st, md := parseSafetensors(t, buf.Bytes())
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range st {
			if !yield(n) {
				return
			}
		}
	})
	want := []string{"0.base.0.phi_0", "0.base.0.psi_0", "0.map", "1.bias", "1.weight"}
	if !slices.Equal(names, want) || len(st["0.map"].values) != 48*48 {
		t.Errorf("tensors %v (map of %d values), want %v (2,304)", names, len(st["0.map"].values), want)
	}
	if src := md["privtrain.torch"]; !strings.Contains(src, "Whitened([Scattering2D(1, 2, 1, 8, 8), nn.GroupNorm(1, 3, eps=1e-05, affine=False), nn.Flatten()], 48)") {
		t.Errorf("module source:\n%s", src)
	}

	const python = "/usr/bin/python3"
	if testing.Short() || exec.Command(python, "-c", "import torch, numpy").Run() != nil {
		t.Skip("no PyTorch run (-short, or no /usr/bin/python3 with torch and numpy)")
	}
	dir := t.TempDir()
	if err := export.TorchFile(filepath.Join(dir, "w.safetensors"), m); err != nil {
		t.Fatal(err)
	}
	if err := export.PyTorchFile(filepath.Join(dir, "w.py"), m, "w", "w.safetensors"); err != nil {
		t.Fatal(err)
	}
	x := randomInput(m, 4, 5)
	ours := logitsOf(t, m, x)
	x64 := make([]float64, len(x))
	for k, v := range x {
		x64[k] = float64(v)
	}
	write(t, filepath.Join(dir, "x"), x64)
	script := fmt.Sprintf(`import importlib.util, json, numpy as np, torch
spec = importlib.util.spec_from_file_location("w", %q)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
model = mod.load_model()
x = torch.from_numpy(np.fromfile(%q, dtype="<f8").reshape((4,) + mod.INPUT_SHAPE))
with torch.no_grad():
    print(json.dumps(model(x).numpy().ravel().tolist()))
`, filepath.Join(dir, "w.py"), filepath.Join(dir, "x"))
	out, err := exec.Command(python, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []float64
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(ours) {
		t.Fatalf("PyTorch printed %s (%v)", out, err)
	}
	for j := range got {
		if d := math.Abs(got[j] - ours[j]); d > 1e-4*(1+math.Abs(ours[j])) {
			t.Errorf("logit %d: PyTorch %.10g, ours %.10g", j, got[j], ours[j])
		}
	}
}
