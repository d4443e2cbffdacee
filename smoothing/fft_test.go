package smoothing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// The divisor of the paper's FFT formula, 1 − σ·fft(dvec) with dvec = [−2, 1, 0, …, 0, 1],
// computed by an FFT of dvec itself; the digest gives fft(dvec) for d = 4 and 5.
func TestEigenvaluesFromFFTOfDvec(t *testing.T) {
	digest := map[int][]float64{
		4: {0, -2, -4, -2},
		5: {0, -1.381966, -3.618034, -3.618034, -1.381966},
	}
	for _, d := range []int{2, 3, 4, 5, 8, 13, 100} {
		dvec := make([]complex128, d)
		dvec[0] += -2
		dvec[1%d] += 1
		dvec[(d-1)%d] += 1
		spec := fourier.NewCmplxFFT(d).Coefficients(nil, dvec)
		for k := 0; k < d; k++ {
			if imag(spec[k]) > 1e-12 {
				t.Fatalf("d=%d: fft(dvec)[%d] = %v is not real", d, k, spec[k])
			}
			if want, ok := digest[d]; ok && math.Abs(real(spec[k])-want[k]) > 5e-7 {
				t.Errorf("d=%d: fft(dvec)[%d] = %v, digest %v", d, k, real(spec[k]), want[k])
			}
			for _, sigma := range []float64{0.5, 3} {
				if got, want := eigenvalue(sigma, k, d), 1-sigma*real(spec[k]); math.Abs(got-want) > 1e-12 {
					t.Errorf("d=%d σ=%v: λ_%d = %v, 1 − σ·fft(dvec) = %v", d, sigma, k, got, want)
				}
			}
		}
	}
}

func TestFFTSolverMatchesDenseSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, d := range []int{1, 2, 3, 7, 64} {
		for _, sigma := range []float64{0, 0.2, 1, 10} {
			v := randomVector(rng, d)
			want := denseSolve(t, d, sigma, v)
			f, err := NewFFTSolver(d, sigma)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, d)
			if err := f.Solve(got, v); err != nil {
				t.Fatal(err)
			}
			if e := maxAbsDiff(got, want); e > 1e-12 {
				t.Errorf("d=%d σ=%v: max |FFT − dense| = %g", d, sigma, e)
			}
		}
	}
}

// The two implementations agree on the MNIST CNN's parameter count (26,010 = 2·3²·5·17²,
// a length with awkward prime factors for the FFT) and a few more. (For a large prime length
// such as 1009, FFTPACK falls back to a plain DFT whose error, ~5e-11, exceeds this bound,
// while the tridiagonal solve still matches a dense solve to ~1e-15.)
func TestFFTAgreesWithTridiagonal(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, d := range []int{26010, 7850, 4096, 1000} {
		for _, sigma := range []float64{0.2, 1, 10} {
			t.Run(fmt.Sprintf("d=%d/σ=%v", d, sigma), func(t *testing.T) {
				v := randomVector(rng, d)
				f, err := NewFFTSolver(d, sigma)
				if err != nil {
					t.Fatal(err)
				}
				viaFFT := make([]float64, d)
				if err := f.Solve(viaFFT, v); err != nil {
					t.Fatal(err)
				}
				viaThomas := make([]float64, d)
				if err := mustSolver(t, d, sigma).Solve(viaThomas, v); err != nil {
					t.Fatal(err)
				}
				if e := maxAbsDiff(viaFFT, viaThomas); e > 1e-12 {
					t.Errorf("max |FFT − tridiagonal| = %g, want ≤ 1e-12", e)
				}
			})
		}
	}
}
