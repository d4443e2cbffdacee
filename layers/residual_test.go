package layers_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/layers/layertest"
)

func conv3(f, stride int) layers.Conv2D {
	return layers.Conv2D{Filters: f, Kernel: [2]int{3, 3}, Stride: [2]int{stride, stride}, Padding: [2]int{1, 1}}
}

// residualCases are blocks of every shape: the identity shortcut, a projection (1×1
// conv with stride) when the body halves the image and changes the channels, ScaleNorm,
// a param-free layer first in the body, and a block nested in another's body behind a
// conv (so that the inner block's input gradient, the sum of its two branches', reaches
// a parametrised layer).
func residualCases() []struct {
	name string
	l    layers.Residual
	in   []int
} {
	inner := layers.Residual{Body: []layers.Layer{conv3(3, 1), layers.ReLU{}, conv3(3, 1)}}
	return []struct {
		name string
		l    layers.Residual
		in   []int
	}{
		{"identity", layers.Residual{Body: []layers.Layer{conv3(2, 1), layers.ReLU{}, conv3(2, 1)}}, []int{2, 5, 5}},
		{"projection", layers.Residual{
			Body:     []layers.Layer{conv3(3, 2), layers.GroupNorm{Groups: 3}, layers.ReLU{}, conv3(3, 1)},
			Shortcut: []layers.Layer{layers.Conv2D{Filters: 3, Kernel: [2]int{1, 1}, Stride: [2]int{2, 2}, NoBias: true}},
		}, []int{2, 6, 5}},
		// A GroupNorm first in the body: Gorgonia worked on a view of x in place, and the
		// identity shortcut read the overwritten x until each branch got its own copy.
		{"scalenorm", layers.Residual{Body: []layers.Layer{layers.GroupNorm{Groups: 1}, layers.Tanh{}, conv3(4, 1)}, ScaleNorm: 2}, []int{4, 3, 4}},
		{"nested", layers.Residual{
			Body:     []layers.Layer{conv3(3, 1), layers.ReLU{}, inner, layers.GroupNorm{Groups: 3}},
			Shortcut: []layers.Layer{layers.Conv2D{Filters: 3, Kernel: [2]int{1, 1}}},
		}, []int{2, 4, 4}},
	}
}

// TestOracleResidual: a residual block's per-example gradients (its sub-layers' kinds,
// nested in its tap) pass the independent oracle in float64 — Gorgonia's symbolic
// gradient of each example's own loss through the whole block, finite differences, the
// clip norms over every nested parameter — on Gorgonia and on the native engine.
func TestOracleResidual(t *testing.T) {
	for _, tc := range residualCases() {
		rep := layertest.Check(t, tc.l, tc.in, layertest.Config{Seed: 5})
		if rep.Native < 0 {
			t.Errorf("%s: no native kernel", tc.name)
		}
		t.Logf("%s on %v: %v", tc.name, tc.in, rep)
	}
}

// TestResidualShapes: the block refuses a shortcut that does not match the body, an
// empty body and a negative ScaleNorm, naming the problem; its parameters are named by
// part and position, and TapGroups lists one group per parametrised sub-layer.
func TestResidualShapes(t *testing.T) {
	for _, tc := range []struct {
		l    layers.Residual
		want string
	}{
		{layers.Residual{Body: []layers.Layer{conv3(3, 2)}}, "projection"},
		{layers.Residual{}, "no body"},
		{layers.Residual{Body: []layers.Layer{conv3(2, 1)}, ScaleNorm: -1}, "scale_norm"},
		{layers.Residual{Body: []layers.Layer{layers.Flatten{}}}, "CHW"},
	} {
		if _, err := tc.l.OutputShape([]int{2, 4, 4}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error mentioning %q", tc.l, err, tc.want)
		}
	}
	l := residualCases()[3].l
	var names []string
	for _, p := range l.Params([]int{2, 4, 4}) {
		names = append(names, p.Name)
	}
	want := []string{"body.0.weight", "body.0.bias", "body.2.body.0.weight", "body.2.body.0.bias", "body.2.body.2.weight", "body.2.body.2.bias",
		"body.3.weight", "body.3.bias", "shortcut.0.weight", "shortcut.0.bias"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("params %v, want %v", names, want)
	}
	if g := l.TapGroups([]int{2, 4, 4}); !reflect.DeepEqual(g, []string{"body.0", "body.2.body.0", "body.2.body.2", "body.3", "shortcut.0"}) {
		t.Errorf("tap groups %v", g)
	}
}

// TestResidualCodec: every case is stored as nested {"type","settings"} records and
// decodes to the same block; bad nested records are refused with the part named.
func TestResidualCodec(t *testing.T) {
	c, ok := layers.CodecFor(layers.Residual{})
	if !ok {
		t.Fatal("residual not registered")
	}
	for _, tc := range residualCases() {
		raw, err := c.Encode(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.Decode(raw)
		if err != nil || !reflect.DeepEqual(back, tc.l) {
			t.Errorf("%s: %s decodes to %#v (%v)", tc.name, raw, back, err)
		}
	}
	raw, _ := c.Encode(layers.Residual{Body: []layers.Layer{layers.ReLU{}}, ScaleNorm: 2})
	if want := `{"body":[{"type":"relu"}],"shortcut":[],"scale_norm":2}`; string(raw) != want {
		t.Errorf("stored as %s, want %s", raw, want)
	}
	for _, tc := range []struct{ s, want string }{
		{`{"body":[],"shortcut":[],"scale_norm":0}`, "no body"},
		{`{"body":[{"type":"nope"}],"shortcut":[],"scale_norm":0}`, `unknown layer type "nope"`},
		{`{"body":[{"type":"relu"}],"shortcut":[{"type":"conv","settings":{"filters":"x"}}],"scale_norm":0}`, "shortcut layer 0"},
		{`{"body":[{"type":"relu"}],"extra":1}`, "unknown field"},
	} {
		if l, err := c.Decode(json.RawMessage(tc.s)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want an error mentioning %q", tc.s, l, err, tc.want)
		}
	}
}

// TestOracleWSConv2D: the weight-standardised conv's per-example gradients, through the
// standardisation, pass the oracle (Gorgonia's symbolic gradient through the graph's own
// standardisation, and finite differences), on Gorgonia and native; and inside a block.
func TestOracleWSConv2D(t *testing.T) {
	for _, tc := range []struct {
		l  layers.Layer
		in []int
	}{
		{layers.WSConv2D{Filters: 3, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, []int{2, 5, 5}},
		{layers.WSConv2D{Filters: 2, Kernel: [2]int{2, 3}, Stride: [2]int{2, 1}, NoBias: true}, []int{3, 6, 5}},
		// 2·2·2 = 8 weights per filter: float32 runs the standardisation's chain rule in
		// assembly where the CPU path has it (the oracle runs float32 on every path).
		{layers.WSConv2D{Filters: 8, Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}, []int{2, 4, 4}},
		{layers.Residual{Body: []layers.Layer{layers.WSConv2D{Filters: 2, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, layers.GroupNorm{Groups: 1}, layers.ReLU{}},
			Shortcut: []layers.Layer{layers.WSConv2D{Filters: 2, Kernel: [2]int{1, 1}}}}, []int{3, 4, 4}},
	} {
		rep := layertest.Check(t, tc.l, tc.in, layertest.Config{Seed: 6})
		if rep.Native < 0 {
			t.Errorf("%+v: no native kernel", tc.l)
		}
		t.Logf("%+v on %v: %v", tc.l, tc.in, rep)
	}
}
