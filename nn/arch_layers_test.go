package nn_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/prior"
)

// TestArchitectureNewLayers: the normalisation and pooling layers are stored with their
// settings and rebuilt equal.
func TestArchitectureNewLayers(t *testing.T) {
	spec := nn.Spec{Name: "norm-pool", InputShape: []int{4, 6, 6}, NumClasses: 3, Layers: []layers.Layer{
		layers.GroupNorm{Groups: 2, NoAffine: true},
		layers.Conv2D{Filters: 4, Kernel: [2]int{3, 3}, Init: layers.HeNormal{}},
		layers.GroupNorm{Groups: 4},
		layers.AvgPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}, Padding: [2]int{1, 1}},
		layers.GlobalAvgPool2D{},
		layers.Flatten{},
		layers.Dense{Units: 3},
	}}
	a, err := nn.ArchitectureOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := nn.SpecOf(a, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Layers, spec.Layers) {
		t.Errorf("rebuilt %+v, want %+v", got.Layers, spec.Layers)
	}
}

// TestStoredSettingsJSON: every layer of package layers is stored exactly as
// Architecture's documentation shows (snake_case settings, initializers by name, no
// settings for parameter-free layers) and rebuilt from that JSON; the registry holds
// every kind of package layers and nothing else.
func TestStoredSettingsJSON(t *testing.T) {
	cases := []struct {
		layer layers.Layer
		json  string
	}{
		{layers.Conv2D{Filters: 16, Kernel: [2]int{8, 8}, Stride: [2]int{2, 2}, Padding: [2]int{3, 3}},
			`{"type":"conv","settings":{"filters":16,"kernel":[8,8],"stride":[2,2],"padding":[3,3],"no_bias":false,"init":"glorot-uniform"}}`},
		{layers.WSConv2D{Filters: 4, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}, Init: layers.HeNormal{}},
			`{"type":"wsconv","settings":{"filters":4,"kernel":[3,3],"stride":[0,0],"padding":[1,1],"no_bias":false,"init":"he-normal"}}`},
		{layers.Dense{Units: 10}, `{"type":"dense","settings":{"units":10,"no_bias":false,"init":"glorot-uniform"}}`},
		{layers.Dense{Units: 7, NoBias: true, Init: layers.HeNormal{}}, `{"type":"dense","settings":{"units":7,"no_bias":true,"init":"he-normal"}}`},
		{layers.MaxPool2D{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}}, `{"type":"maxpool","settings":{"kernel":[2,2],"stride":[1,1],"padding":[0,0]}}`},
		{layers.AvgPool2D{Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, `{"type":"avgpool","settings":{"kernel":[3,3],"stride":[0,0],"padding":[1,1]}}`},
		{layers.GroupNorm{Groups: 9, NoAffine: true}, `{"type":"groupnorm","settings":{"groups":9,"no_affine":true}}`},
		{layers.CenterCrop{Height: 24, Width: 24}, `{"type":"crop","settings":{"height":24,"width":24}}`},
		{layers.Scattering2D{J: 2, L: 8}, `{"type":"scattering2d","settings":{"j":2,"l":8}}`},
		{layers.Tanh{}, `{"type":"tanh"}`},
		{layers.ReLU{}, `{"type":"relu"}`},
		{layers.Flatten{}, `{"type":"flatten"}`},
		{layers.GlobalAvgPool2D{}, `{"type":"globalavgpool"}`},
		{layers.Residual{Body: []layers.Layer{layers.Conv2D{Filters: 1, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, layers.ReLU{}}, ScaleNorm: 1},
			`{"type":"residual","settings":{"body":[{"type":"conv","settings":{"filters":1,"kernel":[3,3],"stride":[0,0],"padding":[1,1],"no_bias":false,"init":"glorot-uniform"}},{"type":"relu"}],"shortcut":[],"scale_norm":1}}`},
		{layers.Whitened{Base: []layers.Layer{layers.Scattering2D{J: 1, L: 2}, layers.GroupNorm{Groups: 1, NoAffine: true}, layers.Flatten{}},
			Prior: prior.DeadLeaves{Scenes: 20, Seed: 3}, Floor: 0.01},
			`{"type":"whitened","settings":{"base":[{"type":"scattering2d","settings":{"j":1,"l":2}},{"type":"groupnorm","settings":{"groups":1,"no_affine":true}},{"type":"flatten"}],"prior":"dead-leaves v1","scenes":20,"seed":3,"floor":0.01}}`},
	}
	kinds := map[string]bool{}
	for _, tc := range cases {
		kinds[tc.layer.Kind()] = true
		spec := nn.Spec{Name: "one", InputShape: []int{1, 4, 4}, NumClasses: 2, Layers: []layers.Layer{tc.layer}}
		a, err := nn.ArchitectureOf(spec)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(a.Layers[0])
		if err != nil || string(b) != tc.json {
			t.Errorf("%T stored as %s (%v), want %s", tc.layer, b, err, tc.json)
		}
		var lc nn.LayerConfig
		if err := json.Unmarshal([]byte(tc.json), &lc); err != nil {
			t.Fatal(err)
		}
		a.Layers[0] = lc
		got, err := nn.SpecOf(a, "one")
		if err != nil || !reflect.DeepEqual(got.Layers, spec.Layers) {
			t.Errorf("%s rebuilt as %#v (%v), want %#v", tc.json, got.Layers, err, tc.layer)
		}
	}
	var registered []string
	for _, c := range layers.Codecs() {
		registered = append(registered, c.Kind)
		if !kinds[c.Kind] {
			t.Errorf("kind %q registered but not covered here", c.Kind)
		}
	}
	if len(registered) != len(kinds) {
		t.Errorf("registered kinds %v, want the %d above", registered, len(kinds))
	}
}

// TestArchitectureScattering: a model whose first layer is Scattering2D{J: 2, L: 8}
// saves its architecture and loads back with the same layers and logits.
func TestArchitectureScattering(t *testing.T) {
	spec := nn.Spec{Name: "scatter-net", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		layers.Scattering2D{J: 2, L: 8}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
	m := newModel(t, spec, 2, nn.WithDType(nn.Float64), nn.WithSeed(2))
	want := randomParams(t, m, 6)
	path := saveModel(t, m, t.TempDir(), nil)
	got, err := nn.LoadModel(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec().Layers, spec.Layers) {
		t.Errorf("rebuilt %#v", got.Spec().Layers)
	}
	p := make([]float64, got.NumParams())
	got.Params(p)
	if firstDiff(p, want) >= 0 {
		t.Error("parameters differ")
	}
	x := randomInput(m, 2, 3)
	if a, b := logitsOf(t, m, x), logitsOf(t, got, x); !slices.Equal(a, b) {
		t.Errorf("logits %v, loaded model %v", a, b)
	}
}
