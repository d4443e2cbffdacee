package nn_test

import (
	"reflect"
	"testing"

	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// TestArchitectureNewLayers: the normalisation and pooling layers are stored with their
// settings and rebuilt equal.
func TestArchitectureNewLayers(t *testing.T) {
	spec := nn.Spec{Name: "norm-pool", InputShape: []int{4, 6, 6}, NumClasses: 3, Layers: []layers.Layer{
		layers.GroupNorm{Groups: 2, NoAffine: true},
		layers.Conv2D{Filters: 4, Kernel: [2]int{3, 3}, Init: layers.HeNormal},
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
	got, err := a.Spec(spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Layers, spec.Layers) {
		t.Errorf("rebuilt %+v, want %+v", got.Layers, spec.Layers)
	}
}
