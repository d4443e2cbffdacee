package export_test

import (
	"bytes"
	"math"
	"math/rand/v2"
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

	got, ours := pytorchLogits(t, m, 4, 5)
	for j := range got {
		if d := math.Abs(got[j] - ours[j]); d > 1e-4*(1+math.Abs(ours[j])) {
			t.Errorf("logit %d: PyTorch %.10g, ours %.10g", j, got[j], ours[j])
		}
	}
}
