package scatter

import (
	"fmt"
	"math"
	"math/cmplx"
)

// kymatioPi is the value of π in Kymatio's Gabor normalisation 2·3.1415·σ²/slant
// (kymatio/scattering2d/filter_bank.py, gabor_2d). Keeping it, instead of math.Pi, keeps
// our coefficients equal to Kymatio's; the low-pass filter's DC gain is π/3.1415, not 1.
const kymatioPi = 3.1415

// Bank is the Morlet filter bank of a 2-D scattering transform on an M×N (padded) grid,
// stored in the Fourier domain as Kymatio stores it: real spectra (the spatial filters are
// Hermitian, so the imaginary part of their DFT vanishes), one level per resolution.
type Bank struct {
	// J is the number of scales, L the number of angles; M, N the grid size.
	J, L, M, N int
	// Psi holds the J·L wavelets, scale-major: Psi[j*L+ℓ].
	Psi []Wavelet
	// Phi[r] is the low-pass filter's spectrum periodised to resolution r (grid
	// (M>>r)×(N>>r), row-major), r = 0…J−1.
	Phi [][]float64
	// PhiSigma is the low-pass Gaussian's width, 0.8·2^(J−1) as in Kymatio.
	PhiSigma float64
}

// Wavelet is one Morlet wavelet of a Bank with its defining parameters.
type Wavelet struct {
	// J is the scale index, Theta the angle index ℓ.
	J, Theta int
	// Sigma = 0.8·2^j, Angle = (⌊L−L/2−1⌋−ℓ)·π/L, Xi = (3π/4)/2^j, Slant = 4/L: the
	// arguments Kymatio passes to morlet_2d.
	Sigma, Angle, Xi, Slant float64
	// Levels[r] is the spectrum periodised to resolution r, r = 0…min(j, J−2) (only the
	// resolutions an order-2 path at j1 < j needs, and at least resolution 0).
	Levels [][]float64
}

// NewBank builds the filter bank of J scales and L angles on an M×N grid. M and N must be
// multiples of 2^J (the padded sizes a Scattering computes): periodisation halves them J
// times.
func NewBank(M, N, J, L int) (*Bank, error) {
	if J < 1 || J > maxJ {
		return nil, fmt.Errorf("scatter: J = %d, want 1…%d", J, maxJ)
	}
	if L < 1 || L > maxL {
		return nil, fmt.Errorf("scatter: L = %d, want 1…%d", L, maxL)
	}
	if M < 1 || N < 1 || M%(1<<J) != 0 || N%(1<<J) != 0 {
		return nil, fmt.Errorf("scatter: filter grid %d×%d is not a positive multiple of 2^J = %d", M, N, 1<<J)
	}
	b := &Bank{J: J, L: L, M: M, N: N, PhiSigma: 0.8 * math.Exp2(float64(J-1))}
	var f fft2
	for j := 0; j < J; j++ {
		for l := 0; l < L; l++ {
			w := Wavelet{
				J: j, Theta: l,
				Sigma: 0.8 * math.Exp2(float64(j)),
				Angle: float64(int(float64(L)-float64(L)/2-1)-l) * math.Pi / float64(L),
				Xi:    3.0 / 4.0 * math.Pi / math.Exp2(float64(j)),
				Slant: 4.0 / float64(L),
			}
			spec := realSpectrum(&f, Morlet2D(M, N, w.Sigma, w.Angle, w.Xi, w.Slant), M, N)
			levels := min(j+1, J-1)
			if levels < 1 {
				levels = 1
			}
			for r := 0; r < levels; r++ {
				w.Levels = append(w.Levels, periodize(spec, M, N, r))
			}
			b.Psi = append(b.Psi, w)
		}
	}
	spec := realSpectrum(&f, Gabor2D(M, N, b.PhiSigma, 0, 0, 1), M, N)
	for r := 0; r < J; r++ {
		b.Phi = append(b.Phi, periodize(spec, M, N, r))
	}
	return b, nil
}

// Gabor2D is Kymatio's gabor_2d on an M×N grid, row-major: the Gaussian envelope
// exp(−uᵀ R D R⁻¹ u / 2σ²), D = diag(1, slant²), R the rotation by theta, times the plane
// wave exp(i ξ (u₀ cos θ + u₁ sin θ)), periodised over the 5×5 neighbouring periods
// (u = (i + eₓM, j + e_yN), eₓ, e_y ∈ −2…2) and divided by 2·3.1415·σ²/slant. u₀ is the row.
func Gabor2D(M, N int, sigma, theta, xi, slant float64) []complex128 {
	c, s := math.Cos(theta), math.Sin(theta)
	// R D Rᵀ with R = [[c, −s], [s, c]].
	s2 := slant * slant
	k := 1 / (2 * sigma * sigma)
	c00 := (c*c + s2*s*s) * k
	c01 := (c*s - s2*s*c) * k // both off-diagonal entries
	c11 := (s*s + s2*c*c) * k
	out := make([]complex128, M*N)
	norm := 2 * kymatioPi * sigma * sigma / slant
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var sum complex128
			for ex := -2; ex <= 2; ex++ {
				x := float64(i + ex*M)
				for ey := -2; ey <= 2; ey++ {
					y := float64(j + ey*N)
					sum += cmplx.Exp(complex(-(c00*x*x + 2*c01*x*y + c11*y*y), xi*(x*c+y*s)))
				}
			}
			out[i*N+j] = sum / complex(norm, 0)
		}
	}
	return out
}

// Morlet2D is Kymatio's morlet_2d: the Gabor filter minus K times its envelope (the
// Gabor filter at ξ = 0), K = Σ gabor / Σ envelope, so that the wavelet sums to zero.
func Morlet2D(M, N int, sigma, theta, xi, slant float64) []complex128 {
	wv := Gabor2D(M, N, sigma, theta, xi, slant)
	env := Gabor2D(M, N, sigma, theta, 0, slant)
	var sw, se complex128
	for i := range wv {
		sw += wv[i]
		se += env[i]
	}
	K := sw / se
	for i := range wv {
		wv[i] -= K * env[i]
	}
	return wv
}

// realSpectrum is the real part of the 2-D DFT of an M×N filter.
func realSpectrum(f *fft2, h []complex128, M, N int) []float64 {
	buf := append([]complex128(nil), h...)
	f.forward(buf, M, N)
	out := make([]float64, M*N)
	for i, v := range buf {
		out[i] = real(v)
	}
	return out
}

// periodize is Kymatio's periodize_filter_fft: the spectrum restricted to the frequencies
// of a grid 2^res times coarser, |k| < M/2^(res+1) per axis (the rest masked out), folded
// onto that grid. It is what multiplying in the Fourier domain at resolution res needs.
func periodize(x []float64, M, N, res int) []float64 {
	m, n := M>>res, N>>res
	out := make([]float64, m*n)
	for i := 0; i < M; i++ {
		if !keep(i, M, res) {
			continue
		}
		for j := 0; j < N; j++ {
			if keep(j, N, res) {
				out[(i%m)*n+j%n] += x[i*N+j]
			}
		}
	}
	return out
}

// keep says whether index i of an axis of length M survives Kymatio's mask at resolution
// res: the mask zeroes indices M/2^(res+1) … M/2^(res+1) + M(1−2^−res) − 1.
func keep(i, M, res int) bool {
	start := M >> (res + 1)
	length := M - M>>res
	return i < start || i >= start+length
}

// Spatial returns the m×n spatial filter (row-major, complex) whose DFT is the real
// spectrum spec, such as a Wavelet level or a Phi level of the same grid: convolving with
// it circularly is multiplying by spec in the Fourier domain.
func Spatial(spec []float64, m, n int) []complex128 {
	if len(spec) != m*n {
		panic("scatter: Spatial: spectrum is not m×n")
	}
	h := make([]complex128, m*n)
	for i, v := range spec {
		h[i] = complex(v, 0)
	}
	var f fft2
	f.inverse(h, m, n)
	return h
}
