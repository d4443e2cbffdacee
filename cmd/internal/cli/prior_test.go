package cli_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// TestPreparePriors: a model starting with a Whitened layer has its map computed the
// first time, with the images counted and the cache file named, and loaded the next
// time; another seed is another map, computed; a model without one is left alone, saying
// nothing. (Damaged cache files: package prior's TestMapCache.)
func TestPreparePriors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(prior.CacheEnv, dir)
	spec := nn.Spec{Name: "w", InputShape: []int{1, 8, 8}, NumClasses: 2, Layers: []layers.Layer{
		layers.Whitened{
			Base:  []layers.Layer{layers.Scattering2D{J: 1, L: 2}, layers.GroupNorm{Groups: 1, NoAffine: true}, layers.Flatten{}},
			Prior: prior.DeadLeaves{Scenes: 300, Seed: 11}, // 600 images: two chunks
			Floor: 0.01,
		},
		layers.Dense{Units: 2},
	}}
	var out bytes.Buffer
	if err := cli.PreparePriors(spec, &out); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "whitening-*.map"))
	for _, want := range []string{"computing the whitening map of the dead-leaves prior (600 images", "covariance: 512 of 600 images", "covariance: 600 of 600 images, 100%", "inverse square root: ", "% (", " s left)", "cached in " + dir} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("first call says\n%s\nwithout %q", out.String(), want)
		}
	}
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	// In this process the map is remembered; the file is what another process loads.
	out.Reset()
	if err := cli.PreparePriors(spec, &out); err != nil || !strings.Contains(out.String(), "loaded from") {
		t.Errorf("second call: %v, says %q", err, out.String())
	}
	w := spec.Layers[0].(layers.Whitened)
	w.Prior.Seed = 12 // another key: computed, not taken from memory
	spec.Layers[0] = w
	out.Reset()
	if err := cli.PreparePriors(spec, &out); err != nil || !strings.Contains(out.String(), "computing") {
		t.Errorf("another seed: %v, says %q", err, out.String())
	}
	if files, _ = filepath.Glob(filepath.Join(dir, "whitening-*.map")); len(files) != 2 {
		t.Errorf("cache files %v, want two", files)
	}
	out.Reset()
	if err := cli.PreparePriors(nn.Spec{Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 2}}}, &out); err != nil || out.Len() != 0 {
		t.Errorf("a model without a prior: %v, says %q", err, out.String())
	}
}
