package models

import (
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// tanhBeforeFlatten has a stand-alone Tanh right before Flatten and Dense: the shape in
// which a Gorgonia graph's Read of the dense input sees Tanh's output overwritten by its
// own derivative (layers/native_test.go).
func tanhBeforeFlatten() nn.Spec {
	return nn.Spec{Name: "tanh-flatten", InputShape: []int{2, 6, 6}, NumClasses: 3, Layers: []layers.Layer{
		layers.Conv2D{Filters: 3, Kernel: [2]int{3, 3}},
		layers.MaxPool2D{Kernel: [2]int{2, 2}},
		layers.Tanh{},
		layers.Flatten{},
		layers.Dense{Units: 3},
	}}
}

// groupNormNet has GroupNorm with and without parameters, after a tanh and before a ReLU,
// and average pooling with padding.
func groupNormNet() nn.Spec {
	return nn.Spec{Name: "groupnorm-avgpool", InputShape: []int{2, 6, 6}, NumClasses: 3, Layers: []layers.Layer{
		layers.GroupNorm{Groups: 2, NoAffine: true},
		layers.Conv2D{Filters: 4, Kernel: [2]int{3, 3}},
		layers.Tanh{},
		layers.GroupNorm{Groups: 2},
		layers.ReLU{},
		layers.AvgPool2D{Kernel: [2]int{2, 2}, Padding: [2]int{1, 1}},
		layers.Flatten{},
		layers.Dense{Units: 3},
	}}
}

// TestEnginesAgree runs each model on both engines in float64 with the same parameters and
// batch (padding rows included) and compares everything a step returns: loss, correct
// count, per-example gradients and norms, flat and per-layer clipped sums, the plain sum,
// evaluation and predictions.
func TestEnginesAgree(t *testing.T) {
	cases := []struct {
		spec  nn.Spec
		batch int
	}{
		{LogisticRegression(), 9},
		{MNISTCNN(ReLU), 9},
		{MNISTCNN(Tanh), 5},
		{CIFAR10CNN(ReLU), 3},
		{tanhBeforeFlatten(), 6},
		{groupNormNet(), 5},
	}
	for ci, tc := range cases {
		t.Run(tc.spec.Name, func(t *testing.T) {
			if testing.Short() && tc.batch == 3 {
				t.Skip("CIFAR on Gorgonia is slow")
			}
			rng := rand.New(rand.NewPCG(uint64(ci), 17))
			models := map[nn.Engine]*nn.Model{}
			for _, e := range []nn.Engine{nn.EngineNative, nn.EngineGorgonia} {
				m, err := nn.New(tc.spec, tc.batch, nn.WithDType(nn.Float64), nn.WithSeed(3), nn.WithEngine(e))
				if err != nil {
					t.Fatal(err)
				}
				if m.Engine() != e {
					t.Fatalf("engine %v, want %v", m.Engine(), e)
				}
				models[e] = m
			}
			nat, ref := models[nn.EngineNative], models[nn.EngineGorgonia]
			p := perturbedParams(nat, rng)
			for _, m := range models {
				if err := m.SetParams(p); err != nil {
					t.Fatal(err)
				}
			}
			x, labels := randomBatch(rng, tc.spec, tc.batch)
			mask := make([]bool, tc.batch)
			for i := range mask {
				mask[i] = i != 1
			}
			b := nn.Batch{X: x, Labels: labels, Mask: mask}
			d := nat.NumParams()
			rules := []clipping.Rule{clipping.Flat{C: 0.05}, clipping.PerLayerEqual(0.05, len(nat.ParamLayers()))}
			for _, rule := range rules {
				got, want := make([]float64, d), make([]float64, d)
				sg, err := nat.ClippedGradient(b, rule, got)
				if err != nil {
					t.Fatal(err)
				}
				sw, err := ref.ClippedGradient(b, rule, want)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(got, want); d > 1e-10 {
					t.Errorf("%T clipped sum differs by %g", rule, d)
				}
				if d := maxRelDiff([]float64{sg.Loss}, []float64{sw.Loss}); d > 1e-12 || sg.Correct != sw.Correct || sg.Clipped != sw.Clipped {
					t.Errorf("%T: loss %v / %v, correct %d / %d, clipped %d / %d", rule, sg.Loss, sw.Loss, sg.Correct, sw.Correct, sg.Clipped, sw.Clipped)
				}
				if d := maxRelDiff(sg.Norms, sw.Norms); d > 1e-10 {
					t.Errorf("norms differ by %g", d)
				}
			}
			ge, gr := make([]float64, d), make([]float64, d)
			for i := range tc.batch {
				if err := nat.PerExampleGradient(i, ge); err != nil {
					t.Fatal(err)
				}
				if err := ref.PerExampleGradient(i, gr); err != nil {
					t.Fatal(err)
				}
				if i == 1 {
					continue // padding row: its taps are not part of the contract
				}
				if d := maxRelDiff(ge, gr); d > 1e-10 {
					t.Errorf("example %d: per-example gradient differs by %g", i, d)
				}
			}
			got, want := make([]float64, d), make([]float64, d)
			if _, err := nat.Gradient(b, got); err != nil {
				t.Fatal(err)
			}
			if _, err := ref.Gradient(b, want); err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(got, want); d > 1e-10 {
				t.Errorf("sum differs by %g", d)
			}
			le, ce, err := nat.Evaluate(b)
			if err != nil {
				t.Fatal(err)
			}
			lr, cr, err := ref.Evaluate(b)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff([]float64{le}, []float64{lr}); d > 1e-12 || ce != cr {
				t.Errorf("evaluate: loss %v / %v, correct %d / %d", le, lr, ce, cr)
			}
			pe, pr := make([]int, tc.batch), make([]int, tc.batch)
			if err := nat.Predict(x, pe); err != nil {
				t.Fatal(err)
			}
			if err := ref.Predict(x, pr); err != nil {
				t.Fatal(err)
			}
			for i := range pe {
				if pe[i] != pr[i] {
					t.Errorf("prediction %d: %d / %d", i, pe[i], pr[i])
				}
			}
		})
	}
}

// TestFloat32StepMatchesFloat64 checks the float32 native step, which runs on the
// assembly kernels where the CPU has them, against the float64 Gorgonia step on the same
// (float32-representable) parameters and batch: loss, norms and clipped sum to float32
// accuracy.
func TestFloat32StepMatchesFloat64(t *testing.T) {
	for ci, spec := range []nn.Spec{LogisticRegression(), MNISTCNN(ReLU), MNISTCNN(Tanh)} {
		t.Run(spec.Name, func(t *testing.T) {
			const batch = 37 // several chunks, a ragged last one
			rng := rand.New(rand.NewPCG(uint64(ci), 23))
			m32, err := nn.New(spec, batch, nn.WithSeed(5))
			if err != nil {
				t.Fatal(err)
			}
			m64, err := nn.New(spec, batch, nn.WithSeed(5), nn.WithDType(nn.Float64), nn.WithEngine(nn.EngineGorgonia))
			if err != nil {
				t.Fatal(err)
			}
			p := perturbedParams(m32, rng)
			for j := range p {
				p[j] = float64(float32(p[j]))
			}
			for _, m := range []*nn.Model{m32, m64} {
				if err := m.SetParams(p); err != nil {
					t.Fatal(err)
				}
			}
			x, labels := randomBatch(rng, spec, batch)
			mask := make([]bool, batch)
			for i := range mask {
				mask[i] = i%7 != 2
			}
			b := nn.Batch{X: x, Labels: labels, Mask: mask}
			rule := clipping.Flat{C: 0.1}
			g32, g64 := make([]float64, m32.NumParams()), make([]float64, m64.NumParams())
			s32, err := m32.ClippedGradient(b, rule, g32)
			if err != nil {
				t.Fatal(err)
			}
			s64, err := m64.ClippedGradient(b, rule, g64)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(g32, g64); d > 5e-6 {
				t.Errorf("clipped sum: float32 differs from float64 by %g", d)
			}
			if d := maxRelDiff(s32.Norms, s64.Norms); d > 5e-6 {
				t.Errorf("norms: float32 differs from float64 by %g", d)
			}
			if d := maxRelDiff([]float64{s32.Loss}, []float64{s64.Loss}); d > 5e-6 {
				t.Errorf("loss %v, float64 %v", s32.Loss, s64.Loss)
			}
		})
	}
}
