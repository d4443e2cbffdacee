package scatter

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// TestCFFT holds the mixed-radix FFT to the defining sum Σ_t x_t e^{∓2πi jt/n}, for every
// length up to 64 (radices 4, 2, 3 and the generic prime butterfly), both directions.
func TestCFFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 64; n++ {
		f := newCFFT(n)
		for _, inverse := range []bool{false, true} {
			x := make([]complex128, n)
			for i := range x {
				x[i] = complex(rng.NormFloat64(), rng.NormFloat64())
			}
			sign := -1.0
			if inverse {
				sign = 1
			}
			want := make([]complex128, n)
			var scale float64
			for j := range n {
				for k, v := range x {
					want[j] += v * cmplx.Exp(complex(0, sign*2*math.Pi*float64(j*k%n)/float64(n)))
				}
				scale = max(scale, cmplx.Abs(want[j]))
			}
			f.transform(x, inverse)
			for j := range n {
				if d := cmplx.Abs(x[j] - want[j]); d > 1e-13*scale {
					t.Fatalf("n = %d inverse %v: coefficient %d = %v, want %v", n, inverse, j, x[j], want[j])
				}
			}
		}
	}
}

func BenchmarkCFFT(b *testing.B) {
	for _, n := range []int{9, 18, 36} {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(float64(i), 1)
		}
		b.Run("own", func(b *testing.B) {
			f := newCFFT(n)
			for b.Loop() {
				f.transform(x, false)
			}
		})
		b.Run("gonum", func(b *testing.B) {
			f := fourier.NewCmplxFFT(n)
			for b.Loop() {
				f.Coefficients(x, x)
			}
		})
	}
}
