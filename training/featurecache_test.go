package training_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// tally is a registered front end that scales its input by Scale and counts the examples
// it transforms, so that a test sees whether features were computed or loaded.
type tally struct{ Scale float32 }

var tallied atomic.Int64

func init() { layers.Register[tally]("test-tally") }

func (tally) Kind() string                        { return "tally" }
func (tally) OutputShape(in []int) ([]int, error) { return in, nil }
func (tally) Params([]int) []layers.ParamSpec     { return nil }
func (tally) Apply(*G.Node, []*G.Node) (*G.Node, *layers.Tap, error) {
	return nil, nil, errors.New("tally runs as a front end only")
}
func (l tally) NewTransform(in []int) (func([]float32) ([]float32, error), error) {
	L := 1
	for _, d := range in {
		L *= d
	}
	return func(x []float32) ([]float32, error) {
		tallied.Add(int64(len(x) / L))
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = l.Scale * v
		}
		return y, nil
	}, nil
}

func tallySpec(scale float32) nn.Spec {
	return nn.Spec{Name: "tally", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		tally{Scale: scale}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
}

// sameFeatures fails unless a and b hold bitwise the same values and labels.
func sameFeatures(t *testing.T, a, b datasets.Dataset) {
	t.Helper()
	if a.Len() != b.Len() || !slices.Equal(a.Shape(), b.Shape()) {
		t.Fatalf("%d×%v vs %d×%v", a.Len(), a.Shape(), b.Len(), b.Shape())
	}
	x, y := make([]float32, datasets.Size(a)), make([]float32, datasets.Size(b))
	for i := range a.Len() {
		la, lb := a.Example(i, x), b.Example(i, y)
		if la != lb {
			t.Fatalf("example %d: label %d vs %d", i, la, lb)
		}
		for j := range x {
			if math.Float32bits(x[j]) != math.Float32bits(y[j]) {
				t.Fatalf("example %d value %d: %v vs %v", i, j, x[j], y[j])
			}
		}
	}
}

// TestFrontEndFeaturesDeterministic: the scattering front end gives bitwise the same
// features twice, which is what makes caching them sound.
func TestFrontEndFeaturesDeterministic(t *testing.T) {
	ds := randomGrays(t, rand.New(rand.NewPCG(1, 1)), 30)
	m := newModel(t, scatterSpec(), 4)
	a, err := m.FrontEndFeatures(ds)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newModel(t, scatterSpec(), 4).FrontEndFeatures(ds)
	if err != nil {
		t.Fatal(err)
	}
	sameFeatures(t, a, b)
}

// TestFeatureCacheRoundTrip: the first call computes and writes, the second loads
// bitwise the features FrontEndFeatures computes, transforming only the two examples it
// checks, and takes the labels from the dataset given.
func TestFeatureCacheRoundTrip(t *testing.T) {
	ds := randomGrays(t, rand.New(rand.NewPCG(2, 2)), 40)
	m := newModel(t, tallySpec(3), 4)
	want, err := m.FrontEndFeatures(ds)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cache") // created by the call
	before := tallied.Load()
	got, use, err := training.CachedFrontEndFeatures(m, ds, dir)
	if err != nil || use.Loaded || use.Problem != "" || filepath.Dir(use.File) != dir || tallied.Load()-before != 40 {
		t.Fatalf("first call: %+v, %v, %d transformed", use, err, tallied.Load()-before)
	}
	sameFeatures(t, got, want)
	if _, err := os.Stat(use.File); err != nil {
		t.Fatal(err)
	}
	before = tallied.Load()
	got, use2, err := training.CachedFrontEndFeatures(m, ds, dir)
	if err != nil || !use2.Loaded || use2.Problem != "" || use2.File != use.File || tallied.Load()-before != 2 {
		t.Fatalf("second call: %+v, %v, %d transformed", use2, err, tallied.Load()-before)
	}
	sameFeatures(t, got, want)
	// The scattering front end the same way.
	sm := newModel(t, scatterSpec(), 4)
	swant, err := sm.FrontEndFeatures(ds)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		sgot, use, err := training.CachedFrontEndFeatures(sm, ds, dir)
		if err != nil || use.Loaded != (i == 1) || use.Problem != "" {
			t.Fatalf("scattering call %d: %+v, %v", i, use, err)
		}
		sameFeatures(t, sgot, swant)
	}
}

// TestFeatureCacheKey: other data, another front-end setting or another dtype get another
// file; a file of other data put under this data's name is refused, not used.
func TestFeatureCacheKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	ds := randomGrays(t, rng, 20)
	dir := t.TempDir()
	file := func(m *nn.Model, ds datasets.Dataset) training.FeatureCacheUse {
		t.Helper()
		_, use, err := training.CachedFrontEndFeatures(m, ds, dir)
		if err != nil {
			t.Fatal(err)
		}
		return use
	}
	base := file(newModel(t, tallySpec(3), 4), ds)
	// One pixel of one example changed.
	pix, lab := make([]byte, 20*64), make([]byte, 20)
	x := make([]float32, 64)
	for i := range 20 {
		lab[i] = byte(ds.Example(i, x))
		for j, v := range x {
			pix[i*64+j] = byte(math.Round(float64(v) * 255))
		}
	}
	// NewImages keeps its slices: every dataset gets its own copies.
	same, err := datasets.NewImages([]int{1, 8, 8}, 3, slices.Clone(pix), slices.Clone(lab))
	if err != nil {
		t.Fatal(err)
	}
	changed := slices.Clone(pix)
	changed[13*64+5] ^= 1
	other, err := datasets.NewImages([]int{1, 8, 8}, 3, changed, slices.Clone(lab))
	if err != nil {
		t.Fatal(err)
	}
	if u := file(newModel(t, tallySpec(3), 4), same); !u.Loaded || u.File != base.File {
		t.Errorf("the same pixels rebuilt: %+v, want a hit on %s", u, base.File)
	}
	// Other labels, same pixels: the features do not depend on labels.
	relabelled := slices.Clone(lab)
	relabelled[0] = (relabelled[0] + 1) % 3
	rl, err := datasets.NewImages([]int{1, 8, 8}, 3, slices.Clone(pix), relabelled)
	if err != nil {
		t.Fatal(err)
	}
	if g, u := file(newModel(t, tallySpec(3), 4), rl), base; !g.Loaded || g.File != u.File {
		t.Errorf("relabelled: %+v, want a hit", g)
	}
	fewer, err := datasets.Subset(ds, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{base.File: "base"}
	for name, u := range map[string]training.FeatureCacheUse{
		"one pixel":  file(newModel(t, tallySpec(3), 4), other),
		"fewer":      file(newModel(t, tallySpec(3), 4), fewer),
		"scale":      file(newModel(t, tallySpec(2), 4), ds),
		"float64":    file(newModel(t, tallySpec(3), 4, nn.WithDType(nn.Float64)), ds),
		"scattering": file(newModel(t, scatterSpec(), 4), ds),
	} {
		if u.Loaded || u.Problem != "" {
			t.Errorf("%s: %+v, want computed afresh", name, u)
		}
		if prev, dup := seen[u.File]; dup {
			t.Errorf("%s and %s share the file %s", name, prev, u.File)
		}
		seen[u.File] = name
	}
	// A valid file of other data under base's name.
	data, err := os.ReadFile(filepath.Join(dir, filepath.Base(file(newModel(t, tallySpec(3), 4), other).File)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base.File, data, 0o600); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, tallySpec(3), 4)
	got, u, err := training.CachedFrontEndFeatures(m, ds, dir)
	if err != nil || u.Loaded || !strings.Contains(u.Problem, base.File) || !strings.Contains(u.Problem, "other data") {
		t.Fatalf("swapped file: %+v, %v", u, err)
	}
	want, err := m.FrontEndFeatures(ds)
	if err != nil {
		t.Fatal(err)
	}
	sameFeatures(t, got, want)
}

// TestFeatureCacheDamaged: a corrupt byte or a truncated file is reported with the file's
// name, the features are computed, and the file is rewritten so that the next run loads it.
func TestFeatureCacheDamaged(t *testing.T) {
	ds := randomGrays(t, rand.New(rand.NewPCG(4, 4)), 20)
	m := newModel(t, tallySpec(3), 4)
	want, err := m.FrontEndFeatures(ds)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, use, err := training.CachedFrontEndFeatures(m, ds, dir)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(use.File)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := slices.Clone(good)
	corrupt[len(corrupt)/2] ^= 0x10
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"corrupt byte": {corrupt, "checksum"},
		"truncated":    {good[:len(good)-100], "truncated"},
		"empty":        {nil, "shorter than a header"},
	} {
		if err := os.WriteFile(use.File, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		before := tallied.Load()
		got, u, err := training.CachedFrontEndFeatures(m, ds, dir)
		if err != nil || u.Loaded || !strings.Contains(u.Problem, use.File) || !strings.Contains(u.Problem, c.want) || tallied.Load()-before != 20 {
			t.Fatalf("%s: %+v, %v, %d transformed", name, u, err, tallied.Load()-before)
		}
		sameFeatures(t, got, want)
		if _, u, err = training.CachedFrontEndFeatures(m, ds, dir); err != nil || !u.Loaded {
			t.Fatalf("%s, after the rewrite: %+v, %v", name, u, err)
		}
	}
	// A directory that cannot be written is a problem, not a failure.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, u, err := training.CachedFrontEndFeatures(m, ds, blocked)
	if err != nil || u.Loaded || !strings.Contains(u.Problem, "writing") {
		t.Fatalf("unwritable directory: %+v, %v", u, err)
	}
	sameFeatures(t, got, want)
	// A front end that is not registered is computed, not cached.
	var n atomic.Int64
	spec := nn.Spec{Name: "double", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{counting{&n}, layers.Flatten{}, layers.Dense{Units: 3}}}
	if _, u, err := training.CachedFrontEndFeatures(newModel(t, spec, 4), ds, dir); err != nil || u.File != "" || !strings.Contains(u.Problem, "not registered") || n.Load() != 20 {
		t.Fatalf("unregistered front end: %+v, %v", u, err)
	}
}

// TestTrainerFeatureCache: a run that loads its features from the cache trains to
// bitwise the same parameters and test accuracy as a run without a cache and as the run
// that filled it, and OnFrontEnd says which it was.
func TestTrainerFeatureCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	train, test := randomGrays(t, rng, 48), randomGrays(t, rng, 12)
	dir := t.TempDir()
	run := func(cache string) ([]float64, float64, []training.FeatureCacheUse) {
		m := newModel(t, scatterSpec(), 8, nn.WithSeed(4))
		var last training.FrontEndProgress
		tn, err := training.NewTrainer(m, training.TrainerConfig{
			Data:         training.Data{Train: train, Test: test, Name: "random"},
			Rule:         dpoptim.NewSGD(dpoptim.Constant(0.5)),
			Schedule:     training.Schedule{BatchSize: 8, Epochs: 2},
			Privacy:      &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5},
			Seed:         seedPtr(11),
			Callbacks:    training.Callbacks{OnFrontEnd: func(p training.FrontEndProgress) { last = p }},
			FeatureCache: training.FeatureCache{Dir: cache},
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tn.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := make([]float64, m.NumParams())
		m.Params(p)
		return p, res.TestAccuracy, last.Cache
	}
	want, wantAcc, none := run("")
	if none != nil {
		t.Errorf("no cache, yet OnFrontEnd reported %+v", none)
	}
	for i, loaded := range []bool{false, true} {
		got, acc, uses := run(dir)
		if len(uses) != 2 || uses[0].Set != "training" || uses[1].Set != "test" || uses[0].Loaded != loaded || uses[1].Loaded != loaded || uses[0].File == uses[1].File {
			t.Fatalf("run %d: cache %+v, want training and test loaded=%v", i, uses, loaded)
		}
		if !slices.Equal(got, want) || acc != wantAcc {
			t.Errorf("run %d (loaded=%v): parameters or accuracy (%v vs %v) differ from the uncached run", i, loaded, acc, wantAcc)
		}
	}
}
