package export_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// residualExportSpec has every residual form: a weight-standardised stem, a projecting
// block with ScaleNorm, and a block nested in another's body.
func residualExportSpec() nn.Spec {
	conv := func(f, stride int) layers.Conv2D {
		return layers.Conv2D{Filters: f, Kernel: [2]int{3, 3}, Stride: [2]int{stride, stride}, Padding: [2]int{1, 1}}
	}
	return nn.Spec{Name: "residual-export", InputShape: []int{2, 6, 6}, NumClasses: 3, Layers: []layers.Layer{
		layers.WSConv2D(conv(4, 1)), layers.ReLU{},
		layers.Residual{
			Body:      []layers.Layer{conv(6, 2), layers.GroupNorm{Groups: 2}, layers.ReLU{}, layers.WSConv2D(conv(6, 1))},
			Shortcut:  []layers.Layer{layers.WSConv2D{Filters: 6, Kernel: [2]int{1, 1}, Stride: [2]int{2, 2}, NoBias: true}},
			ScaleNorm: 3,
		},
		layers.Residual{Body: []layers.Layer{layers.ReLU{}, layers.Residual{Body: []layers.Layer{conv(6, 1), layers.Tanh{}}}, conv(6, 1)}},
		layers.GlobalAvgPool2D{}, layers.Flatten{}, layers.Dense{Units: 3},
	}}
}

// TestExportResidual: the residual network exports as Residual and WSConv2d modules,
// its tensors named by the modules' state_dict ("2.body.0.weight", "3.body.1.body.0.bias",
// "2.post.0.weight") with every parameter exactly once, and, where /usr/bin/python3 has
// torch, the written Python module's logits equal ours in float64 to 1e-10.
func TestExportResidual(t *testing.T) {
	m := newModel(t, residualExportSpec(), 4, nn.WithDType(nn.Float64))
	theta := make([]float64, m.NumParams())
	rng := rand.New(rand.NewPCG(3, 9))
	for j := range theta {
		theta[j] = rng.NormFloat64() * 0.5
	}
	if err := m.SetParams(theta); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := export.Torch(&buf, m); err != nil {
		t.Fatal(err)
	}
	st, md := parseSafetensors(t, buf.Bytes())
	var names []string
	total := 0
	for name, v := range st {
		names = append(names, name)
		total += len(v.values)
	}
	slices.Sort(names)
	want := []string{"0.bias", "0.weight",
		"2.body.0.bias", "2.body.0.weight", "2.body.1.bias", "2.body.1.weight", "2.body.3.bias", "2.body.3.weight",
		"2.post.0.bias", "2.post.0.weight", "2.shortcut.0.weight",
		"3.body.1.body.0.bias", "3.body.1.body.0.weight", "3.body.2.bias", "3.body.2.weight",
		"6.bias", "6.weight"}
	if !slices.Equal(names, want) || total != len(theta) {
		t.Errorf("tensors %v (%d values), want %v (%d)", names, total, want, len(theta))
	}
	// The stored weight (not the standardised one) is exported: the stem's is θ's first.
	if w := st["0.weight"].values; !slices.Equal(w, theta[:len(w)]) {
		t.Error("0.weight is not the stored weight")
	}
	src := md["privtrain.torch"]
	for _, s := range []string{"WSConv2d(2, 4, kernel_size=(3, 3)", "Residual([nn.Conv2d(4, 6,", "[WSConv2d(4, 6, kernel_size=(1, 1), stride=(2, 2), padding=(0, 0), bias=False)], [nn.GroupNorm(3, 6,",
		"Residual([nn.ReLU(), Residual([nn.Conv2d(6, 6, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=True), nn.Tanh()], [], []), nn.Conv2d("} {
		if !strings.Contains(src, s) {
			t.Errorf("module source lacks %q:\n%s", s, src)
		}
	}

	got, ours := pytorchLogits(t, m, 4, 5)
	for j := range got {
		if d := got[j] - ours[j]; d > 1e-10 || d < -1e-10 {
			t.Errorf("logit %d: PyTorch %.17g, ours %.17g", j, got[j], ours[j])
		}
	}
}
