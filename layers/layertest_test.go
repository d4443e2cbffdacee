package layers_test

import (
	"fmt"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/layers/layertest"
)

// Every parametrised layer kind of this package (and the test-only Scale) is checked by
// the independent per-example gradient oracle: Gorgonia's symbolic gradient of each
// example's own loss, central finite differences, and the clip norms against the
// gradients the clipped sum adds.

func TestOracleDense(t *testing.T) {
	for _, tc := range []struct {
		l  layers.Dense
		in []int
	}{
		{layers.Dense{Units: 4}, []int{5}},
		{layers.Dense{Units: 3, NoBias: true}, []int{7}},
		{layers.Dense{Units: 1}, []int{2}},
	} {
		rep := layertest.Check(t, tc.l, tc.in, layertest.Config{Seed: 1})
		t.Logf("%+v on %v: %v", tc.l, tc.in, rep)
	}
}

func TestOracleConv2D(t *testing.T) {
	for _, tc := range []struct {
		l  layers.Conv2D
		in []int
	}{
		{layers.Conv2D{Filters: 3, Kernel: [2]int{3, 3}}, []int{2, 5, 5}},
		{layers.Conv2D{Filters: 2, Kernel: [2]int{3, 2}, Stride: [2]int{2, 1}, Padding: [2]int{1, 1}}, []int{3, 6, 5}},
		{layers.Conv2D{Filters: 4, Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}, NoBias: true}, []int{1, 4, 4}},
	} {
		rep := layertest.Check(t, tc.l, tc.in, layertest.Config{Seed: 2})
		t.Logf("%+v on %v: %v", tc.l, tc.in, rep)
	}
}

func TestOracleGroupNorm(t *testing.T) {
	for _, tc := range []struct {
		l  layers.GroupNorm
		in []int
	}{
		{layers.GroupNorm{Groups: 2}, []int{4, 3, 3}},
		{layers.GroupNorm{Groups: 1}, []int{3, 2, 4}},
		{layers.GroupNorm{Groups: 3}, []int{3, 5, 5}},
		// Channels a multiple of 8: float32 runs the AVX-512 kernels where there are
		// any (an odd and an even number of positions, one channel per group).
		{layers.GroupNorm{Groups: 4}, []int{8, 3, 3}},
		{layers.GroupNorm{Groups: 16}, []int{16, 2, 2}},
	} {
		rep := layertest.Check(t, tc.l, tc.in, layertest.Config{Seed: 3})
		t.Logf("%+v on %v: %v", tc.l, tc.in, rep)
	}
}

func TestOracleScale(t *testing.T) {
	for _, l := range []layers.Scale{{Bias: true}, {}} {
		rep := layertest.Check(t, l, []int{6}, layertest.Config{Seed: 4, Batch: 4})
		t.Logf("%+v: %v", l, rep)
	}
}

// recorder is a testing.TB that records the failures reported to it instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// offScale is Scale with a per-example gradient formula that is off by a small amount: its
// first entry (∂ℓ_i/∂γ_0) is 0.1 % too large. The forward graph is Scale's.
type offScale struct{ layers.Scale }

func (l offScale) Apply(x *G.Node, params []*G.Node) (*G.Node, *layers.Tap, error) {
	y, tap, err := l.Scale.Apply(x, params)
	if err == nil {
		tap.Shape = offShape{tap.Shape}
	}
	return y, tap, err
}

type offShape struct{ clipping.Shape }

func (s offShape) Bind32(in, gz []float32) clipping.Gradient[float32] {
	return clipping.Formed[float32](offKind[float32]{s.Shape.Bind32(in, gz)})
}

func (s offShape) Bind64(in, gz []float64) clipping.Gradient[float64] {
	return clipping.Formed[float64](offKind[float64]{s.Shape.Bind64(in, gz)})
}

type offKind[T float32 | float64] struct{ g clipping.Gradient[T] }

func (k offKind[T]) NumParams() int        { return k.g.NumParams() }
func (k offKind[T]) Check(batch int) error { return k.g.Check(batch) }
func (k offKind[T]) NewExampleScratch() clipping.ExampleScratch[T] {
	return offScratch[T]{k.g.NewScratch(1)}
}

type offScratch[T float32 | float64] struct{ s clipping.Scratch[T] }

func (s offScratch[T]) Example(worker, i int, g []T) {
	s.s.Example(worker, i, g)
	g[0] *= 1.001
}

// badNormScale is Scale whose kind reports squared norms 2 % too small: its gradients are
// right, but the clip factor is not computed from them.
type badNormScale struct{ layers.Scale }

func (l badNormScale) Apply(x *G.Node, params []*G.Node) (*G.Node, *layers.Tap, error) {
	y, tap, err := l.Scale.Apply(x, params)
	if err == nil {
		tap.Shape = badNormShape{tap.Shape}
	}
	return y, tap, err
}

type badNormShape struct{ clipping.Shape }

func (s badNormShape) Bind32(in, gz []float32) clipping.Gradient[float32] {
	return badNormGradient[float32]{s.Shape.Bind32(in, gz)}
}

func (s badNormShape) Bind64(in, gz []float64) clipping.Gradient[float64] {
	return badNormGradient[float64]{s.Shape.Bind64(in, gz)}
}

type badNormGradient[T float32 | float64] struct{ clipping.Gradient[T] }

func (g badNormGradient[T]) NewScratch(chunk int) clipping.Scratch[T] {
	return badNormScratch[T]{g.Gradient.NewScratch(chunk)}
}

type badNormScratch[T float32 | float64] struct{ clipping.Scratch[T] }

func (s badNormScratch[T]) SquaredNorms(worker int, rows []int, sq []float64) {
	s.Scratch.SquaredNorms(worker, rows, sq)
	for q := range sq {
		sq[q] *= 0.98
	}
}

// TestOracleCatchesWrongGradients runs the oracle on the two broken copies of Scale
// through a recorder and asserts that it reports them, and the right complaint; the
// unbroken Scale with the same draws reports nothing.
func TestOracleCatchesWrongGradients(t *testing.T) {
	cfg := layertest.Config{Seed: 4, Batch: 4}
	var good recorder
	good.TB = t
	layertest.Check(&good, layers.Scale{Bias: true}, []int{6}, cfg)
	if len(good.errs) != 0 {
		t.Fatalf("the unbroken Scale failed the oracle: %v", good.errs)
	}
	for _, tc := range []struct {
		name string
		l    layers.Layer
		want string
	}{
		{"gradient off by 0.1 % in one entry", offScale{layers.Scale{Bias: true}}, "vs Gorgonia's symbolic gradient"},
		{"squared norm 2 % small", badNormScale{layers.Scale{Bias: true}}, "squared norm"},
	} {
		expectFailure(t, tc.name, tc.l, []int{6}, cfg, tc.want)
	}
}

// expectFailure runs the oracle on a broken layer l through a recorder and asserts that
// it reports failures, one of which mentions want.
func expectFailure(t *testing.T, name string, l layers.Layer, in []int, cfg layertest.Config, want string) {
	t.Helper()
	r := recorder{TB: t}
	rep := layertest.Check(&r, l, in, cfg)
	if len(r.errs) == 0 {
		t.Errorf("%s: the oracle reported nothing (%v)", name, rep)
		return
	}
	found := false
	for _, e := range r.errs {
		found = found || strings.Contains(e, want)
	}
	if !found {
		t.Errorf("%s: no failure mentions %q: %v", name, want, r.errs)
	}
	t.Logf("%s: %d failures recorded, e.g. %s; %v", name, len(r.errs), r.errs[0], rep)
}

// TestOracleLayerNorm: the test-only LayerNorm (layernorm_test.go) without planted bugs
// passes the oracle.
func TestOracleLayerNorm(t *testing.T) {
	for _, n := range []int{2, 5, 16} {
		rep := layertest.Check(t, layers.LayerNorm{}, []int{n}, layertest.Config{Seed: 6})
		t.Logf("n = %d: %v", n, rep)
	}
}

// TestOracleCatchesNativeMistakes plants in the test-only LayerNorm's native code the two
// mistakes an independent review made when adding such a layer (issue 39) and asserts that
// layertest.Check reports each: the input gradient without −mean(g) (seen through the
// fixed linear map Check puts below the layer) and per-example rows not cleared between
// Backward calls (seen by running a first, different batch through the same buffers).
func TestOracleCatchesNativeMistakes(t *testing.T) {
	for _, tc := range []struct{ bug, want string }{
		{"no-mean-g", "input gradient"},
		{"stale-rows", "native example"},
	} {
		expectFailure(t, "bug "+tc.bug, layers.LayerNorm{Bug: tc.bug}, []int{5}, layertest.Config{Seed: 6}, tc.want)
	}
}
