package main

import (
	"math"
	"testing"
)

// softmaxResidual's r·xᵀ is the gradient of the cross-entropy −log softmax(Wx + b)_y:
// checked against central finite differences of the loss written out here.
func TestSoftmaxResidualIsTheGradient(t *testing.T) {
	const d, k = 3, 4
	w := []float64{0.1, -0.2, 0.3, 0.0, 0.5, -0.1, 0.2, 0.2, -0.3, 0.4, 0.1, -0.5, 0.05, -0.05, 0.1, 0.0}
	x := []float64{1, -0.5, 2}
	y := 2
	loss := func(w []float64) float64 {
		z := make([]float64, k)
		s := 0.0
		for c := range k {
			z[c] = w[k*d+c]
			for j := range d {
				z[c] += w[c*d+j] * x[j]
			}
			s += math.Exp(z[c])
		}
		return math.Log(s) - z[y]
	}
	r := make([]float64, k)
	softmaxResidual(w, x, y, d, k, r)
	for i := range w {
		wp, wm := append([]float64(nil), w...), append([]float64(nil), w...)
		wp[i] += 1e-6
		wm[i] -= 1e-6
		fd := (loss(wp) - loss(wm)) / 2e-6
		var an float64
		if i < k*d {
			an = r[i/d] * x[i%d]
		} else {
			an = r[i-k*d]
		}
		if math.Abs(fd-an) > 1e-6 {
			t.Errorf("∂loss/∂w[%d]: analytic %v, finite differences %v", i, an, fd)
		}
	}
}

// clipTo leaves short vectors alone and scales long ones to norm c exactly.
func TestClipTo(t *testing.T) {
	v := []float64{3, 4}
	clipTo(v, 1)
	if math.Abs(v[0]-0.6) > 1e-15 || math.Abs(v[1]-0.8) > 1e-15 {
		t.Errorf("clip of (3, 4) to 1 = %v, want (0.6, 0.8)", v)
	}
	u := []float64{0.3, 0.4}
	clipTo(u, 1)
	if u[0] != 0.3 || u[1] != 0.4 {
		t.Errorf("clip of (0.3, 0.4) to 1 = %v, want it unchanged", u)
	}
}

// The sensitivity the batch-mean accounting uses: two tensors, each clipped into a ball
// of radius 1, differ by at most 2 each, 2√2 in all, reached by opposite unit vectors.
func TestBatchMeanSensitivity(t *testing.T) {
	if got, want := batchMeanSensitivity, math.Sqrt(2*2+2*2); math.Abs(got-want) > 1e-15 {
		t.Errorf("sensitivity %v, want √(2² + 2²) = %v", got, want)
	}
}
