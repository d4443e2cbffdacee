package layers

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/prior"
)

// smallWhitened is a Whitened small enough for a test: a one-scale scattering of 1×8×8
// images (3 channels of 4×4), a GroupNorm, a Flatten: 48 features, whitened by the
// covariance of 400 dead-leaves images.
func smallWhitened() Whitened {
	return Whitened{
		Base:  []Layer{Scattering2D{J: 1, L: 2}, GroupNorm{Groups: 1, NoAffine: true}, Flatten{}},
		Prior: prior.DeadLeaves{Scenes: 200, Seed: 3},
		Floor: 0.01,
	}
}

// TestWhitenedTransformIsTheGraph: NewTransform (the scattering's FFT transform, the
// native GroupNorm and Flatten, the float32 product) computes what Apply's graph of the
// base layers' reference graphs and the map computes, in CHW order.
func TestWhitenedTransformIsTheGraph(t *testing.T) {
	t.Setenv(prior.CacheEnv, t.TempDir())
	l := smallWhitened()
	in := []int{1, 8, 8}
	out, err := l.OutputShape(in)
	if err != nil || !slices.Equal(out, []int{48}) {
		t.Fatalf("OutputShape = %v, %v; want [48]", out, err)
	}
	const b = 3
	ref := runLayer(t, l, b, in, rand.New(rand.NewPCG(5, 6)))
	tr, err := l.NewTransform(in)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, len(ref.x))
	for i, v := range ref.x {
		x[i] = float32(v)
	}
	got, err := tr(x)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != b*48 {
		t.Fatalf("%d values, want %d", len(got), b*48)
	}
	scale := 0.0
	for _, v := range ref.out {
		scale = max(scale, math.Abs(v))
	}
	for i, v := range got {
		if d := math.Abs(float64(v) - ref.out[i]); d > 1e-4*scale {
			t.Fatalf("value %d: transform %g, graph %g (largest %g)", i, v, ref.out[i], scale)
		}
	}
}

// TestWhitenedWhitensThePrior: the base features of the prior's own images, mapped,
// have the covariance s²·λ/(λ + floor·λ₁) in an orthonormal basis: with a tiny floor,
// s² along every direction of variance and 0 along the one the GroupNorm removes (each
// example's 48 values sum to 0). The test's own covariance (plain loops, float64) checks
// it through tr(C²)·d/tr(C)², which is d/(d−1) = 48/47 for d−1 equal eigenvalues and a
// zero one, and far above for the unmapped features.
func TestWhitenedWhitensThePrior(t *testing.T) {
	t.Setenv(prior.CacheEnv, t.TempDir())
	l := smallWhitened()
	l.Floor = 1e-6
	in := []int{1, 8, 8}
	base, d, err := l.base(in)
	if err != nil {
		t.Fatal(err)
	}
	x, err := l.priorImages(in, 0, l.Prior.Len())
	if err != nil {
		t.Fatal(err)
	}
	f, err := base(x)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := l.NewTransform(in)
	if err != nil {
		t.Fatal(err)
	}
	g, err := tr(x)
	if err != nil {
		t.Fatal(err)
	}
	spread := func(v []float32) float64 { // tr(C²)·d / tr(C)²
		n := len(v) / d
		mean := make([]float64, d)
		for i, e := range v {
			mean[i%d] += float64(e) / float64(n)
		}
		c := make([]float64, d*d)
		for r := range n {
			for i := range d {
				for j := range d {
					c[i*d+j] += (float64(v[r*d+i]) - mean[i]) * (float64(v[r*d+j]) - mean[j]) / float64(n)
				}
			}
		}
		tr, tr2 := 0.0, 0.0
		for i := range d {
			tr += c[i*d+i]
			for j := range d {
				tr2 += c[i*d+j] * c[j*d+i]
			}
		}
		return tr2 * float64(d) / (tr * tr)
	}
	before, after := spread(f), spread(g)
	t.Logf("tr(C²)·d/tr(C)²: base features %.3f, whitened %.6f", before, after)
	if want := float64(d) / float64(d-1); math.Abs(after-want) > 1e-3 || before < 2 {
		t.Errorf("tr(C²)·d/tr(C)² = %.4f before and %.6f after the map; want ≫ 1 and %.6f", before, after, want)
	}
}

// TestWhitenedCodec: a Whitened is stored as its settings and read back equal; settings
// that could not have been written are refused with a message naming the problem.
func TestWhitenedCodec(t *testing.T) {
	c, ok := CodecFor(Whitened{})
	if !ok {
		t.Fatal("Whitened is not registered")
	}
	l := smallWhitened()
	raw, err := c.Encode(l)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"base":[{"type":"scattering2d","settings":{"j":1,"l":2}},{"type":"groupnorm","settings":{"groups":1,"no_affine":true}},{"type":"flatten"}],"prior":"dead-leaves v1","scenes":200,"seed":3,"floor":0.01}`
	if string(raw) != want {
		t.Errorf("stored as\n%s\nwant\n%s", raw, want)
	}
	back, err := c.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	bw := back.(Whitened)
	if bw.Prior != l.Prior || bw.Floor != l.Floor || len(bw.Base) != 3 || bw.Base[0] != l.Base[0] || bw.Base[1] != l.Base[1] {
		t.Errorf("read back %+v, want %+v", bw, l)
	}
	for _, bad := range []struct{ edit, msg string }{
		{`"prior":"dead-leaves v2"`, "this build knows only"},
		{`"scenes":0`, "scenes"},
		{`"scenes":-5`, "scenes"},
		{`"floor":0`, "floor"},
		{`"floor":2`, "floor"},
		{`"floor":1e-300`, "floor"},
		{`"base":[{"type":"whitened","settings":{"base":[{"type":"scattering2d","settings":{"j":1,"l":2}},{"type":"flatten"}],"prior":"dead-leaves v1","scenes":2,"seed":1,"floor":0.5}},{"type":"flatten"}]`, "itself whitened"},
		{`"base":[]`, "no base layers"},
		{`"base":[{"type":"nosuch"}]`, `unknown layer type "nosuch"`},
	} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(want), &m); err != nil {
			t.Fatal(err)
		}
		k, v, _ := strings.Cut(bad.edit, ":")
		m[strings.Trim(k, `"`)] = json.RawMessage(v)
		edited, _ := json.Marshal(m)
		if _, err := c.Decode(edited); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: error %v, want one saying %q", bad.edit, err, bad.msg)
		}
	}
}

// TestWhitenedShapes: the layer refuses what it cannot whiten, saying why.
func TestWhitenedShapes(t *testing.T) {
	ok := smallWhitened()
	for _, c := range []struct {
		l   Whitened
		in  []int
		msg string
	}{
		{Whitened{Prior: ok.Prior, Floor: 0.1}, []int{1, 8, 8}, "no base layers"},
		{Whitened{Base: []Layer{Flatten{}}, Prior: ok.Prior, Floor: 0.1}, []int{1, 8, 8}, "not a fixed front end"},
		{Whitened{Base: []Layer{Scattering2D{J: 1, L: 2}, Dense{Units: 3}}, Prior: ok.Prior, Floor: 0.1}, []int{1, 8, 8}, "not a parameter-free"},
		{Whitened{Base: []Layer{Scattering2D{J: 1, L: 2}}, Prior: ok.Prior, Floor: 0.1}, []int{1, 8, 8}, "want a vector"},
		{Whitened{Base: ok.Base, Prior: ok.Prior, Floor: 0.1}, []int{64}, "want images"},
		{Whitened{Base: ok.Base, Prior: ok.Prior, Floor: math.NaN()}, []int{1, 8, 8}, "floor"},
		{Whitened{Base: ok.Base, Floor: 0.1}, []int{1, 8, 8}, "scenes"},
		{Whitened{Base: []Layer{Scattering2D{J: 1, L: 8}, Flatten{}}, Prior: ok.Prior, Floor: 0.1}, []int{3, 64, 64}, "more than the 4096"},
		{Whitened{Base: ok.Base, Prior: ok.Prior, Floor: 1e-13}, []int{1, 8, 8}, "floor"},
		{Whitened{Base: []Layer{Scattering2D{J: 10, L: 1}, Flatten{}}, Prior: ok.Prior, Floor: 0.1}, []int{1, 16384, 1024}, "at most 49152 values"},
		{Whitened{Base: []Layer{ok, Flatten{}}, Prior: ok.Prior, Floor: 0.1}, []int{1, 8, 8}, "itself whitened"},
	} {
		if _, err := c.l.OutputShape(c.in); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v on %v: error %v, want one saying %q", c.l, c.in, err, c.msg)
		}
	}
}

// TestWhitenedTransformIsLazy (issue 41): NewTransform, which building a model calls,
// does not compute the map — train prints its plan first, then computes it with its
// progress (PrepareContext) — and the transform's first call does, once.
func TestWhitenedTransformIsLazy(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(prior.CacheEnv, dir)
	l := smallWhitened()
	l.Prior.Seed = 41 // a map no other test has in memory
	in := []int{1, 8, 8}
	tr, err := l.NewTransform(in)
	if err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "whitening-*.map")); len(files) != 0 {
		t.Fatalf("NewTransform computed the map: %v", files)
	}
	x := make([]float32, 2*64)
	for i := range x {
		x[i] = float32(i%7) / 7
	}
	if _, err := tr(x); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "whitening-*.map")); len(files) != 1 {
		t.Fatalf("after the first call: cache files %v, want one", files)
	}
}
