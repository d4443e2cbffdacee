package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// naiveCrossEntropy is −log(exp(z_y)/Σ_k exp(z_k)) written without any shift; fine for
// the moderate logits it is used with.
func naiveCrossEntropy(z []float64, y int) float64 {
	var s float64
	for _, v := range z {
		s += math.Exp(v)
	}
	return -math.Log(math.Exp(z[y]) / s)
}

func ceInputs(z, t []float64, k int) []G.Value {
	b := len(z) / k
	return []G.Value{
		tensor.New(tensor.WithShape(b, k), tensor.WithBacking(z)),
		tensor.New(tensor.WithShape(b, k), tensor.WithBacking(t)),
	}
}

func TestCrossEntropyMatchesNaiveFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const b, k = 5, 4
	z := make([]float64, b*k)
	tg := make([]float64, b*k)
	var want float64
	for i := range b {
		for j := range k {
			z[i*k+j] = 3 * rng.NormFloat64()
		}
		y := rng.IntN(k)
		tg[i*k+y] = 1
		want += naiveCrossEntropy(z[i*k:(i+1)*k], y)
	}
	v, err := softmaxCrossEntropy{}.Do(ceInputs(z, tg, k)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(*v.(*G.F64)); math.Abs(got-want) > 1e-13*want {
		t.Fatalf("loss %v, want %v", got, want)
	}
}

// TestCrossEntropyExtremeLogits uses logits whose naive softmax overflows. With logits
// (1000, 0, −1000) the loss of label 0 is log(1 + e⁻¹⁰⁰⁰ + e⁻²⁰⁰⁰) = 0 and of label 1 is
// 1000 + that = 1000 in float64; the gradient at the logits is softmax − onehot =
// (1, 0, 0) − onehot.
func TestCrossEntropyExtremeLogits(t *testing.T) {
	z := []float64{1000, 0, -1000, 1000, 0, -1000, -5, -5, -5}
	tg := []float64{1, 0, 0, 0, 1, 0, 0, 0, 0} // third row: padding
	v, err := softmaxCrossEntropy{}.Do(ceInputs(z, tg, 3)...)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(*v.(*G.F64)); got != 1000 {
		t.Fatalf("loss %v, want 0 + 1000", got)
	}
	d, err := softmaxCrossEntropyGrad{}.Do(append(ceInputs(z, tg, 3), G.NewF64(1))...)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, 0, 0, 1, -1, 0, 0, 0, 0}
	for j, g := range d.Data().([]float64) {
		if math.Abs(g-want[j]) > 1e-300 {
			t.Fatalf("gradient %v, want %v", d.Data(), want)
		}
	}
}

// TestCrossEntropyGradientFiniteDifferences checks the op's gradient against central
// differences of its value, with soft (non one-hot) targets and a scaled upstream
// gradient.
func TestCrossEntropyGradientFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const b, k, up = 3, 5, 0.7
	z := make([]float64, b*k)
	tg := make([]float64, b*k)
	for j := range z {
		z[j] = rng.NormFloat64()
		tg[j] = rng.Float64()
	}
	d, err := softmaxCrossEntropyGrad{}.Do(append(ceInputs(z, tg, k), G.NewF64(up))...)
	if err != nil {
		t.Fatal(err)
	}
	grad := d.Data().([]float64)
	const h = 1e-6
	for j := range z {
		zp := append([]float64(nil), z...)
		zm := append([]float64(nil), z...)
		zp[j] += h
		zm[j] -= h
		lp := crossEntropy(zp, tg, k)
		lm := crossEntropy(zm, tg, k)
		fd := up * (lp - lm) / (2 * h)
		if math.Abs(fd-grad[j]) > 1e-7 {
			t.Fatalf("∂loss/∂z[%d] = %v, central difference %v", j, grad[j], fd)
		}
	}
}

func TestCrossEntropyFloat32(t *testing.T) {
	z := []float32{1, 2, 3, 50, -50, 0}
	tg := []float32{0, 0, 1, 0, 1, 0}
	in := []G.Value{
		tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(z)),
		tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(tg)),
	}
	v, err := softmaxCrossEntropy{}.Do(in...)
	if err != nil {
		t.Fatal(err)
	}
	want := naiveCrossEntropy([]float64{1, 2, 3}, 2) + naiveCrossEntropy([]float64{50, -50, 0}, 1)
	if got := float64(*v.(*G.F32)); math.Abs(got-want) > 1e-5*want {
		t.Fatalf("float32 loss %v, want %v", got, want)
	}
}
