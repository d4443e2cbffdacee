package smoothing

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// FFTSolver applies A_σ⁻¹ through the discrete Fourier transform, as the DP-LSSGD paper
// writes it: A_σ⁻¹v = ifft(fft(v) ./ λ) with λ_k = 1 + 2σ − 2σ·cos(2πk/d), the eigenvalues
// of the circulant A_σ. It costs O(d log d) (more for lengths with large prime factors) and
// exists to cross-check [Solver]; prefer Solver for training.
//
// An FFTSolver keeps work buffers and is not safe for concurrent use.
type FFTSolver struct {
	sigma  float64
	fft    *fourier.FFT
	lambda []float64 // λ_k·d, so that the unnormalised inverse transform needs no rescaling
	coeff  []complex128
}

// NewFFTSolver returns an FFTSolver for vectors of length d ≥ 1 and σ ≥ 0.
func NewFFTSolver(d int, sigma float64) (*FFTSolver, error) {
	if d < 1 {
		return nil, fmt.Errorf("%w: length d = %d, want d ≥ 1", ErrInvalid, d)
	}
	if err := checkSigma(sigma); err != nil {
		return nil, err
	}
	f := &FFTSolver{
		sigma:  sigma,
		fft:    fourier.NewFFT(d),
		lambda: make([]float64, d/2+1),
		coeff:  make([]complex128, d/2+1),
	}
	for k := range f.lambda {
		f.lambda[k] = float64(d) * eigenvalue(sigma, k, d)
	}
	return f, nil
}

// eigenvalue returns λ_k = 1 + 2σ − 2σ·cos(2πk/d) = 1 + 4σ·sin²(πk/d), the k-th eigenvalue
// of A_σ; the sine form avoids cancellation near k = 0.
func eigenvalue(sigma float64, k, d int) float64 {
	s := math.Sin(math.Pi * float64(k) / float64(d))
	return 1 + 4*sigma*s*s
}

// Len returns the vector length d.
func (f *FFTSolver) Len() int { return f.fft.Len() }

// Solve sets dst = A_σ⁻¹ v; dst may be v.
func (f *FFTSolver) Solve(dst, v []float64) error {
	d := f.fft.Len()
	if len(v) != d || len(dst) != d {
		return fmt.Errorf("%w: FFT solver for d = %d got len(v) = %d, len(dst) = %d",
			ErrLength, d, len(v), len(dst))
	}
	// A real signal's spectrum is Hermitian, so the half spectrum suffices.
	f.fft.Coefficients(f.coeff, v)
	for k, l := range f.lambda {
		f.coeff[k] /= complex(l, 0)
	}
	f.fft.Sequence(dst, f.coeff)
	return nil
}
