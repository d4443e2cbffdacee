package scatter

import (
	"math"
	"math/cmplx"
	"testing"
)

// thetaSum is Σ_{n∈ℤ} exp(−n²/(2s²)) e^{iξn} by Poisson summation:
// √(2π)·s·Σ_k exp(−s²(ξ+2πk)²/2), a different series from the one Gabor2D sums.
func thetaSum(s, xi float64) float64 {
	var sum float64
	for k := -20; k <= 20; k++ {
		w := xi + 2*math.Pi*float64(k)
		sum += math.Exp(-s * s * w * w / 2)
	}
	return math.Sqrt(2*math.Pi) * s * sum
}

// TestMorletValues holds Morlet2D to its formula ψ(u) = g(u)(e^{iξ·u} − K)/(2·3.1415σ²/slant)
// at a few pixels, for the axis-aligned orientations, where the envelope separates:
// θ = 0:    g = exp(−(x² + slant²y²)/2σ²), ξ·u = ξx;
// θ = −π/2: g = exp(−(slant²x² + y²)/2σ²), ξ·u = −ξy;
// K = Σ g e^{iξ·u} / Σ g, which factorises into one-dimensional sums (thetaSum).
func TestMorletValues(t *testing.T) {
	const M, N = 24, 20
	cases := []struct {
		sigma, theta, xi, slant float64
	}{
		{0.8, 0, 3 * math.Pi / 4, 0.5},            // j = 0, ℓ = 3 of L = 8
		{1.6, -math.Pi / 2, 3 * math.Pi / 8, 0.5}, // j = 1, ℓ = 7 of L = 8
	}
	points := [][2]int{{0, 0}, {1, 0}, {0, 1}, {M - 1, 0}, {2, 3}, {M - 2, N - 3}}
	for _, c := range cases {
		psi := Morlet2D(M, N, c.sigma, c.theta, c.xi, c.slant)
		K := thetaSum(c.sigma, c.xi) / thetaSum(c.sigma, 0)
		norm := 2 * 3.1415 * c.sigma * c.sigma / c.slant
		for _, p := range points {
			x, y := float64(p[0]), float64(p[1])
			if p[0] >= M/2 {
				x -= M
			}
			if p[1] >= N/2 {
				y -= N
			}
			var g, phase float64
			if c.theta == 0 {
				g = math.Exp(-(x*x + c.slant*c.slant*y*y) / (2 * c.sigma * c.sigma))
				phase = c.xi * x
			} else {
				g = math.Exp(-(c.slant*c.slant*x*x + y*y) / (2 * c.sigma * c.sigma))
				phase = -c.xi * y
			}
			want := complex(g/norm, 0) * (cmplx.Exp(complex(0, phase)) - complex(K, 0))
			if got := psi[p[0]*N+p[1]]; cmplx.Abs(got-want) > 1e-12 {
				t.Errorf("σ=%g θ=%g: ψ%v = %v, formula %v", c.sigma, c.theta, p, got, want)
			}
		}
	}
}

// TestBankFormulas checks the bank's parameters against Kymatio's definitions, the zero
// mean of every wavelet at every resolution, and the low-pass filter's DC gain: Σφ, by
// Poisson summation of the Gaussian, is 2πσ²/(2·3.1415σ²) = π/3.1415 up to terms of order
// exp(−2π²σ²) (1e-22 for σ = 1.6).
func TestBankFormulas(t *testing.T) {
	for _, c := range []struct{ M, N, J, L int }{{36, 36, 2, 8}, {32, 40, 3, 6}} {
		b, err := NewBank(c.M, c.N, c.J, c.L)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Psi) != c.J*c.L || len(b.Phi) != c.J {
			t.Fatalf("%+v: %d wavelets and %d low-pass levels", c, len(b.Psi), len(b.Phi))
		}
		if want := 0.8 * math.Pow(2, float64(c.J-1)); b.PhiSigma != want {
			t.Errorf("%+v: φ's σ = %g, want 0.8·2^(J−1) = %g", c, b.PhiSigma, want)
		}
		for r, phi := range b.Phi {
			if len(phi) != (c.M>>r)*(c.N>>r) {
				t.Errorf("%+v: φ level %d has %d values", c, r, len(phi))
			}
			if got, want := phi[0], math.Pi/3.1415; math.Abs(got-want) > 1e-12 {
				t.Errorf("%+v: φ̂ level %d at 0 = %.15g, want π/3.1415 = %.15g", c, r, got, want)
			}
		}
		for n, w := range b.Psi {
			j, l := n/c.L, n%c.L
			half := c.L / 2 // ⌊L − L/2 − 1⌋ = L/2 − 1 for even L
			if c.L%2 != 0 {
				t.Fatal("test assumes even L")
			}
			wantAngle := float64(half-1-l) * math.Pi / float64(c.L)
			if w.J != j || w.Theta != l || math.Abs(w.Angle-wantAngle) > 1e-15 ||
				w.Sigma != 0.8*math.Pow(2, float64(j)) || math.Abs(w.Xi-0.75*math.Pi/math.Pow(2, float64(j))) > 1e-15 ||
				w.Slant != 4/float64(c.L) {
				t.Errorf("%+v: wavelet %d = %+v", c, n, w)
			}
			wantLevels := max(1, min(j+1, c.J-1))
			if len(w.Levels) != wantLevels {
				t.Errorf("%+v: wavelet %d has %d levels, want %d", c, n, len(w.Levels), wantLevels)
			}
			for r, lv := range w.Levels {
				if math.Abs(lv[0]) > 1e-10 {
					t.Errorf("%+v: wavelet %d level %d: ψ̂(0) = %g, want 0", c, n, r, lv[0])
				}
			}
			var sum complex128
			for _, v := range Morlet2D(c.M, c.N, w.Sigma, w.Angle, w.Xi, w.Slant) {
				sum += v
			}
			if cmplx.Abs(sum) > 1e-10 {
				t.Errorf("%+v: wavelet %d: Σψ = %v, want 0", c, n, sum)
			}
		}
	}
}

// TestLittlewoodPaley checks the frame bounds of Kymatio's J = 2, L = 8 bank on a 36×36
// grid: LP(ω) = |φ̂(ω)|² + ½Σ_λ(|ψ̂_λ(ω)|² + |ψ̂_λ(−ω)|²) (the angles cover a half-plane, so
// each real signal's energy at ±ω is shared) must not exceed 1 — the condition under
// which the scattering is non-expansive (Mallat 2012, Prop. 2.5) — except for the
// (π/3.1415)² ≈ 1.00006 of Kymatio's normalisation constant, and is bounded away from 0
// where natural images have their energy (|ω| ≤ 1.5), so no band is lost.
func TestLittlewoodPaley(t *testing.T) {
	b, err := NewBank(36, 36, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	hi, loBand := littlewoodPaley(b, 1.5)
	if lim := math.Pow(math.Pi/3.1415, 2) + 1e-9; hi > lim {
		t.Errorf("max LP = %.6f > (π/3.1415)² = %.6f", hi, lim)
	}
	if loBand < 0.5 {
		t.Errorf("min LP on |ω| ≤ 1.5 = %.3f, want ≥ 0.5", loBand)
	}
}

// littlewoodPaley returns the maximum of LP over the grid and its minimum over |ω| ≤ radius.
func littlewoodPaley(b *Bank, radius float64) (hi, lo float64) {
	M, N := b.M, b.N
	lo = math.Inf(1)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			a := b.Phi[0][i*N+j] * b.Phi[0][i*N+j]
			m := ((M-i)%M)*N + (N-j)%N
			for _, p := range b.Psi {
				f := p.Levels[0]
				a += 0.5 * (f[i*N+j]*f[i*N+j] + f[m]*f[m])
			}
			hi = math.Max(hi, a)
			wi := 2 * math.Pi * float64((i+M/2)%M-M/2) / float64(M)
			wj := 2 * math.Pi * float64((j+N/2)%N-N/2) / float64(N)
			if math.Hypot(wi, wj) <= radius {
				lo = math.Min(lo, a)
			}
		}
	}
	return hi, lo
}
