package nn_test

import (
	"context"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// scatterDigits returns 256 training and 64 test digits of the embedded MNIST sample, and
// their Scattering2D{J: 2, L: 8} features computed by the layer's own transform, outside
// any model.
func scatterDigits(t *testing.T) (train, test, trainF, testF datasets.Dataset) {
	t.Helper()
	tr, te, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if train, err = datasets.StratifiedSubset(tr, 256); err != nil {
		t.Fatal(err)
	}
	if test, err = datasets.StratifiedSubset(te, 64); err != nil {
		t.Fatal(err)
	}
	sc := layers.Scattering2D{J: 2, L: 8}
	f, err := sc.NewTransform([]int{1, 28, 28})
	if err != nil {
		t.Fatal(err)
	}
	if trainF, err = datasets.Transform(context.Background(), train, []int{81, 7, 7}, f); err != nil {
		t.Fatal(err)
	}
	if testF, err = datasets.Transform(context.Background(), test, []int{81, 7, 7}, f); err != nil {
		t.Fatal(err)
	}
	return train, test, trainF, testF
}

// TestAbsorbedFrontEndBitwise: the scatter models' GroupNorm (no affine) and Flatten join
// the front end, and private training with them there gives bit for bit the parameters,
// test loss and accuracy of the previous path: the same network without the scattering
// (so with no front end at all: its GroupNorm and Flatten run in every step inside the
// native network) trained on the scattering features computed by the layer itself. The
// logits of raw images agree bitwise with those of the features too.
func TestAbsorbedFrontEndBitwise(t *testing.T) {
	train, test, trainF, testF := scatterDigits(t)
	for _, tc := range []struct {
		spec     nn.Spec
		front    string
		features []int
	}{
		{models.ScatterLinearMNIST(), "scattering2d → groupnorm → flatten", []int{3969}},
		{models.ScatterCNNMNIST(models.ReLU), "scattering2d → groupnorm", []int{81, 7, 7}},
	} {
		plain := nn.Spec{Name: tc.spec.Name, InputShape: []int{81, 7, 7}, NumClasses: 10, Layers: tc.spec.Layers[1:]}
		run := func(spec nn.Spec, tr, te datasets.Dataset) (*nn.Model, []float64, training.Result) {
			m := newModel(t, spec, 32, nn.WithSeed(11))
			tn, err := training.NewTrainer(m, training.TrainerConfig{
				Data:     training.Data{Train: tr, Test: te, Name: "mnist"},
				Rule:     dpoptim.NewSGD(dpoptim.Constant(2)),
				Schedule: training.Schedule{BatchSize: 64, Epochs: 2},
				Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5},
				Seed:     seedPtr(5),
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
			return m, p, res
		}
		m, got, res := run(tc.spec, train, test)
		if m.FrontEnd() != tc.front || !slices.Equal(m.FeatureShape(), tc.features) || m.Engine() != nn.EngineNative {
			t.Fatalf("%s: front end %q, features %v, engine %v; want %q, %v, native", tc.spec.Name, m.FrontEnd(), m.FeatureShape(), m.Engine(), tc.front, tc.features)
		}
		ref, want, refRes := run(plain, trainF, testF)
		if ref.HasFrontEnd() || !slices.Equal(ref.FeatureShape(), []int{81, 7, 7}) {
			t.Fatalf("%s: reference has front end %q, features %v: not the old path", tc.spec.Name, ref.FrontEnd(), ref.FeatureShape())
		}
		if res.Steps != 8 || refRes.Steps != 8 {
			t.Fatalf("%s: %d and %d steps, want 2 epochs of 4", tc.spec.Name, res.Steps, refRes.Steps)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: parameter %d is %v, %v on the previous path (not bitwise equal)", tc.spec.Name, i, got[i], want[i])
			}
		}
		if res.TestLoss != refRes.TestLoss || res.TestAccuracy != refRes.TestAccuracy {
			t.Errorf("%s: test loss %v accuracy %v, previous path %v %v", tc.spec.Name, res.TestLoss, res.TestAccuracy, refRes.TestLoss, refRes.TestAccuracy)
		}
		x, _ := batchOf(test, 0, 32)
		xf, _ := batchOf(testF, 0, 32)
		l, lf := make([]float64, 32*10), make([]float64, 32*10)
		if err := m.Logits(nn.Batch{X: x}, l); err != nil {
			t.Fatal(err)
		}
		if err := ref.Logits(nn.Batch{X: xf}, lf); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l, lf) {
			t.Errorf("%s: logits of raw images differ from the previous path's on their features", tc.spec.Name)
		}
	}
}

// TestFrontEndAbsorbs: which layers join a front end. Only parameter-free per-example
// layers directly after a FrontEnd, on the native engine in float32; a GroupNorm with γ and
// β ends the front end, and a model without a FrontEnd layer gets none.
func TestFrontEndAbsorbs(t *testing.T) {
	sc := layers.Scattering2D{J: 1, L: 4} // 1×8×8 → 5×4×4
	for _, tc := range []struct {
		name     string
		layers   []layers.Layer
		opts     []nn.Option
		front    string
		features []int
	}{
		{"no affine", []layers.Layer{sc, layers.GroupNorm{Groups: 5, NoAffine: true}, layers.Flatten{}, layers.Dense{Units: 3}}, nil,
			"scattering2d → groupnorm → flatten", []int{80}},
		{"affine", []layers.Layer{sc, layers.GroupNorm{Groups: 5}, layers.Flatten{}, layers.Dense{Units: 3}}, nil,
			"scattering2d", []int{5, 4, 4}},
		{"pool relu", []layers.Layer{sc, layers.ReLU{}, layers.MaxPool2D{Kernel: [2]int{2, 2}}, layers.Conv2D{Filters: 2, Kernel: [2]int{1, 1}}, layers.Flatten{}, layers.Dense{Units: 3}}, nil,
			"scattering2d → relu → maxpool", []int{5, 2, 2}},
		{"float64", []layers.Layer{sc, layers.GroupNorm{Groups: 5, NoAffine: true}, layers.Flatten{}, layers.Dense{Units: 3}}, []nn.Option{nn.WithDType(nn.Float64)},
			"scattering2d", []int{5, 4, 4}},
		{"gorgonia", []layers.Layer{sc, layers.GroupNorm{Groups: 5, NoAffine: true}, layers.Flatten{}, layers.Dense{Units: 3}}, []nn.Option{nn.WithEngine(nn.EngineGorgonia)},
			"scattering2d", []int{5, 4, 4}},
		{"no front end", []layers.Layer{layers.GroupNorm{Groups: 1, NoAffine: true}, layers.Flatten{}, layers.Dense{Units: 3}}, nil,
			"", []int{1, 8, 8}},
	} {
		spec := nn.Spec{Name: tc.name, InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: tc.layers}
		m := newModel(t, spec, 2, append(tc.opts, nn.WithSeed(1))...)
		if m.FrontEnd() != tc.front || !slices.Equal(m.FeatureShape(), tc.features) || m.HasFrontEnd() != (tc.front != "") {
			t.Errorf("%s: front end %q, features %v; want %q, %v", tc.name, m.FrontEnd(), m.FeatureShape(), tc.front, tc.features)
		}
	}
}
