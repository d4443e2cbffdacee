package layers_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// The tests of the test-only layer Scale (scale_test.go, scale_grad_test.go): a layer
// kind added in two files of its own, with no edit to nn, clipping or any other file of
// this package, trains on the native engine, is stored in and rebuilt from a checkpoint,
// and has exact per-example gradients.

// scaleSpec is Flatten → Dense(4) → Tanh → Scale → Dense(3) on 2×3×3 images.
func scaleSpec() nn.Spec {
	return nn.Spec{Name: "scale-test", InputShape: []int{2, 3, 3}, NumClasses: 3, Layers: []layers.Layer{
		layers.Flatten{}, layers.Dense{Units: 4}, layers.Tanh{}, layers.Scale{Bias: true}, layers.Dense{Units: 3},
	}}
}

// scaleBrute is one example's gradient of its softmax cross-entropy in scaleSpec's
// network, by hand: the forward pass and the chain rule written out, in the flat layout
// (dense1.weight [18,4], dense1.bias, testscale1.weight γ, testscale1.bias β,
// dense2.weight [4,3], dense2.bias).
func scaleBrute(theta []float64, x []float64, label int) []float64 {
	const n, h, k = 18, 4, 3
	w1, b1 := theta[0:72], theta[72:76]
	gamma, beta := theta[76:80], theta[80:84]
	w2, b2 := theta[84:96], theta[96:99]
	a := make([]float64, h) // tanh(x·W1 + b1)
	s := make([]float64, h) // a ⊙ γ + β
	for j := range h {
		z := b1[j]
		for i := range n {
			z += x[i] * w1[i*h+j]
		}
		a[j] = math.Tanh(z)
		s[j] = a[j]*gamma[j] + beta[j]
	}
	logits := make([]float64, k)
	for c := range k {
		logits[c] = b2[c]
		for j := range h {
			logits[c] += s[j] * w2[j*k+c]
		}
	}
	m := slices.Max(logits)
	var sum float64
	for _, v := range logits {
		sum += math.Exp(v - m)
	}
	dz := make([]float64, k) // softmax − one-hot
	for c := range k {
		dz[c] = math.Exp(logits[c]-m) / sum
	}
	dz[label]--
	g := make([]float64, len(theta))
	gw1, gb1, gg, gbeta, gw2, gb2 := g[0:72], g[72:76], g[76:80], g[80:84], g[84:96], g[96:99]
	for j := range h {
		var ds float64
		for c := range k {
			gw2[j*k+c] = s[j] * dz[c]
			ds += w2[j*k+c] * dz[c]
		}
		gg[j], gbeta[j] = a[j]*ds, ds
		da := ds * gamma[j] * (1 - a[j]*a[j])
		gb1[j] = da
		for i := range n {
			gw1[i*h+j] = x[i] * da
		}
	}
	copy(gb2, dz)
	return g
}

// TestScalePerExample: on both engines, in float64, every example's gradient (and its
// norm, and the clipped sum with a bound no example reaches) equals the brute-force
// gradient to 1e-10, and so does a batch-1 model's gradient of the example alone.
func TestScalePerExample(t *testing.T) {
	const batch = 5
	rng := rand.New(rand.NewPCG(11, 12))
	for _, eng := range []nn.Engine{nn.EngineNative, nn.EngineGorgonia} {
		m, err := nn.New(scaleSpec(), batch, nn.WithDType(nn.Float64), nn.WithEngine(eng), nn.WithSeed(1))
		if err != nil {
			t.Fatalf("%v: %v", eng, err)
		}
		if m.Engine() != eng {
			t.Fatalf("engine %v, want %v (%s)", m.Engine(), eng, m.EngineReason())
		}
		theta := make([]float64, m.NumParams())
		for j := range theta {
			theta[j] = rng.NormFloat64() * 0.7
		}
		if len(theta) != 99 {
			t.Fatalf("%d parameters, want 72+4+4+4+12+3 = 99", len(theta))
		}
		if err := m.SetParams(theta); err != nil {
			t.Fatal(err)
		}
		x := make([]float32, batch*18)
		for j := range x {
			x[j] = float32(rng.IntN(512)-256) / 128 // exact in float32
		}
		labels := []int{0, 1, 2, 0, 1}
		sum := make([]float64, len(theta))
		st, err := m.ClippedGradient(nn.Batch{X: x, Labels: labels}, clipping.Flat{C: 1e9}, sum)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(theta))
		one, err := nn.New(scaleSpec(), 1, nn.WithDType(nn.Float64), nn.WithEngine(eng))
		if err != nil {
			t.Fatal(err)
		}
		if err := one.SetParams(theta); err != nil {
			t.Fatal(err)
		}
		for i := range batch {
			xi := make([]float64, 18)
			for j := range xi {
				xi[j] = float64(x[i*18+j])
			}
			brute := scaleBrute(theta, xi, labels[i])
			got := make([]float64, len(theta))
			if err := m.PerExampleGradient(i, got); err != nil {
				t.Fatal(err)
			}
			alone := make([]float64, len(theta))
			if _, err := one.Gradient(nn.Batch{X: x[i*18 : (i+1)*18], Labels: labels[i : i+1]}, alone); err != nil {
				t.Fatal(err)
			}
			var norm float64
			for j, b := range brute {
				norm += b * b
				want[j] += b
				if math.Abs(got[j]-b) > 1e-10 || math.Abs(alone[j]-b) > 1e-10 {
					t.Errorf("%v example %d parameter %d (%s): per-example %v, batch-1 %v, brute force %v", eng, i, j, m.Layout()[paramIndex(m, j)].Name, got[j], alone[j], b)
				}
			}
			if math.Abs(st.Norms[i]-math.Sqrt(norm)) > 1e-10 {
				t.Errorf("%v example %d: norm %v, brute force %v", eng, i, st.Norms[i], math.Sqrt(norm))
			}
		}
		for j := range want {
			if math.Abs(sum[j]-want[j]) > 1e-10 {
				t.Errorf("%v clipped sum (nothing clipped) parameter %d: %v, brute force %v", eng, j, sum[j], want[j])
			}
		}
	}
}

// paramIndex is the layout entry holding flat parameter j.
func paramIndex(m *nn.Model, j int) int {
	for k, p := range m.Layout() {
		if j < p.Size() {
			return k
		}
		j -= p.Size()
	}
	return -1
}

// TestScaleTrainsAndSaves: a DP-SGD run of a network with Scale picks the native engine,
// moves γ and β, and its checkpoint stores Scale's settings and rebuilds the same model.
// Export refuses it clearly (it has no PyTorch module).
func TestScaleTrainsAndSaves(t *testing.T) {
	m, err := nn.New(scaleSpec(), 16, nn.WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	if m.Engine() != nn.EngineNative {
		t.Fatalf("engine %v (%s), want native", m.Engine(), m.EngineReason())
	}
	start := make([]float64, m.NumParams())
	m.Params(start)
	seed := uint64(4)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: datatest.Random(t, []int{2, 3, 3}, 3, 64), Name: "random"},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Privacy:  &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-3},
		Schedule: training.Schedule{BatchSize: 16, Epochs: 2},
		Seed:     &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 8 || !(res.Spent.Epsilon > 0) || math.IsInf(res.Spent.Epsilon, 0) {
		t.Errorf("%d steps, ε = %v; want 8 private steps", res.Steps, res.Spent.Epsilon)
	}
	trained := make([]float64, m.NumParams())
	m.Params(trained)
	if slices.Equal(trained[76:84], start[76:84]) || !slices.Equal(start[76:84], []float64{1, 1, 1, 1, 0, 0, 0, 0}) {
		t.Errorf("γ, β went from %v to %v; want ones and zeros, then trained", start[76:84], trained[76:84])
	}

	c, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Architecture.String(); !strings.Contains(s, `{"type":"testscale","settings":{"bias":true}}`) {
		t.Errorf("stored architecture %s", s)
	}
	path := filepath.Join(t.TempDir(), "m.ckpt")
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	got, err := nn.LoadModel(path, 16)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec().Layers, scaleSpec().Layers) || got.Engine() != nn.EngineNative {
		t.Errorf("rebuilt %#v on %v", got.Spec().Layers, got.Engine())
	}
	p := make([]float64, got.NumParams())
	got.Params(p)
	if !slices.Equal(p, trained) {
		t.Error("reloaded parameters differ")
	}
	x := make([]float32, 16*18)
	for j := range x {
		x[j] = float32(j%7) / 7
	}
	a, b := make([]float64, 16*3), make([]float64, 16*3)
	if err := m.Logits(nn.Batch{X: x}, a); err != nil {
		t.Fatal(err)
	}
	if err := got.Logits(nn.Batch{X: x}, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Errorf("logits %v, reloaded %v", a[:3], b[:3])
	}

	var buf bytes.Buffer
	if err := export.Torch(&buf, m); err == nil || !strings.Contains(err.Error(), "no PyTorch equivalent") || !strings.Contains(err.Error(), "testscale") {
		t.Errorf("export of a layer without a PyTorch module: %v", err)
	}
}
