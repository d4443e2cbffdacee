package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/nn"
)

// TestParameterCounts asserts the counts worked out by hand from the architectures (seeds
// digest §6.1, §6.2, §6.4), layer by layer: weight (fan-in × fan-out) + bias.
func TestParameterCounts(t *testing.T) {
	conv := func(c, k, f int) int { return k*k*c*f + f }
	dense := func(in, out int) int { return in*out + out }
	for _, tc := range []struct {
		spec   nn.Spec
		layers []int
		total  int
	}{
		{LogisticRegression(), []int{dense(28*28, 10)}, 7850},
		{MNISTCNN(ReLU), []int{conv(1, 8, 16), conv(16, 4, 32), dense(4*4*32, 32), dense(32, 10)}, 26010},
		{MNISTCNN(Tanh), []int{1040, 8224, 16416, 330}, 26010},
		// 24×24 crop → pool → 12×12 → pool → 6×6, 64 channels: 2,304 inputs to dense 384.
		{CIFAR10CNN(ReLU), []int{conv(3, 5, 64), conv(64, 5, 64), dense(6*6*64, 384), dense(384, 192), dense(192, 10)}, 1068298},
	} {
		sum := 0
		for _, n := range tc.layers {
			sum += n
		}
		if sum != tc.total {
			t.Fatalf("%s: layer counts %v sum to %d, not %d", tc.spec.Name, tc.layers, sum, tc.total)
		}
		m, err := nn.New(tc.spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		if m.NumParams() != tc.total {
			t.Errorf("%s: %d parameters, want %d", tc.spec.Name, m.NumParams(), tc.total)
		}
		got := make([]int, len(m.ParamLayers()))
		for _, p := range m.Layout() {
			got[slices.IndexFunc(m.ParamLayers(), func(g string) bool { return len(p.Name) > len(g) && p.Name[:len(g)+1] == g+"." })] += p.Size()
		}
		if !slices.Equal(got, tc.layers) {
			t.Errorf("%s: per-layer counts %v, want %v", tc.spec.Name, got, tc.layers)
		}
	}
}

// TestCIFAR10CNNPerExampleGradients repeats the batch-1 reference check on the CIFAR
// network (crop, 'same' convolutions, padded pooling) at a small batch.
func TestCIFAR10CNNPerExampleGradients(t *testing.T) {
	const B = 2
	spec := CIFAR10CNN(Tanh)
	rng := rand.New(rand.NewPCG(21, 22))
	m, err := nn.New(spec, B, nn.WithDType(nn.Float64), nn.WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	params := perturbedParams(m, rng)
	if err := m.SetParams(params); err != nil {
		t.Fatal(err)
	}
	x, labels := randomBatch(rng, spec, B)
	ex := len(x) / B
	sum := make([]float64, m.NumParams())
	if _, err := m.Gradient(nn.Batch{X: x, Labels: labels}, sum); err != nil {
		t.Fatal(err)
	}
	g := make([]float64, m.NumParams())
	for i := range B {
		_, ref := referenceGradient(t, spec, params, x[i*ex:(i+1)*ex], labels[i:i+1])
		if err := m.PerExampleGradient(i, g); err != nil {
			t.Fatal(err)
		}
		if d := maxRelDiff(g, ref); d > 1e-10 {
			t.Fatalf("example %d differs from the batch-1 graph by %g", i, d)
		}
	}
	_, batchGrad := referenceGradient(t, spec, params, x, labels)
	if d := maxRelDiff(sum, batchGrad); d > 1e-10 {
		t.Fatalf("sum differs from Gorgonia's batch gradient by %g", d)
	}
}

// TestFloat32AgreesWithFloat64 runs the default (float32) MNIST CNN against the float64
// one with the same parameters.
func TestFloat32AgreesWithFloat64(t *testing.T) {
	const B = 8
	spec := MNISTCNN(ReLU)
	m32, err := nn.New(spec, B, nn.WithSeed(4))
	if err != nil {
		t.Fatal(err)
	}
	m64, err := nn.New(spec, B, nn.WithSeed(4), nn.WithDType(nn.Float64))
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float64, m32.NumParams())
	m32.Params(p)
	if err := m64.SetParams(p); err != nil {
		t.Fatal(err)
	}
	x, labels := randomBatch(rand.New(rand.NewPCG(5, 6)), spec, B)
	b := nn.Batch{X: x, Labels: labels, Mask: []bool{true, true, false, true, true, true, true, false}}
	g32 := make([]float64, len(p))
	g64 := make([]float64, len(p))
	s32, err := m32.ClippedGradient(b, clipping.Flat{C: 0.5}, g32)
	if err != nil {
		t.Fatal(err)
	}
	s64, err := m64.ClippedGradient(b, clipping.Flat{C: 0.5}, g64)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxRelDiff(g32, g64); d > 1e-4 {
		t.Errorf("float32 clipped gradient differs from float64 by %g", d)
	}
	if d := maxRelDiff(s32.Norms, s64.Norms); d > 1e-4 {
		t.Errorf("float32 norms differ from float64 by %g", d)
	}
	if math.Abs(s32.Loss-s64.Loss) > 1e-5*s64.Loss {
		t.Errorf("loss %v vs %v", s32.Loss, s64.Loss)
	}
}

// A value outside the enum names itself.
func TestActivationString(t *testing.T) {
	for a, want := range map[Activation]string{ReLU: "relu", Tanh: "tanh", 2: "Activation(2)", -1: "Activation(-1)"} {
		if got := a.String(); got != want {
			t.Errorf("Activation(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}
