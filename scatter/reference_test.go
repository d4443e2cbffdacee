package scatter

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// This file holds an independent implementation of the transform: the filters taken to
// the spatial domain without an FFT (the Hermitian part of Kymatio's spatial Morlet, which
// is what taking the real part of its spectrum keeps; coarser levels by explicit DFT
// sums), every convolution a direct circular sum on the padded grid, every subsampling a
// pick of every k-th pixel. It shares only Gabor2D/Morlet2D, which filterbank_test.go holds
// to their closed forms.

// refFilter is a complex spatial filter on an m×n grid.
type refFilter struct {
	m, n int
	h    []complex128
}

// hermitian is (h(u) + conj(h(−u)))/2 on the periodic M×N grid.
func hermitian(h []complex128, M, N int) []complex128 {
	out := make([]complex128, M*N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			out[i*N+j] = (h[i*N+j] + cmplx.Conj(h[((M-i)%M)*N+(N-j)%N])) / 2
		}
	}
	return out
}

// dft1 is a direct DFT of length n along one axis of x (stride apart, n values).
func dft1(x []complex128, off, stride, n int, sign float64) {
	tmp := make([]complex128, n)
	for k := 0; k < n; k++ {
		var s complex128
		for t := 0; t < n; t++ {
			s += x[off+t*stride] * cmplx.Exp(complex(0, sign*2*math.Pi*float64(k*t)/float64(n)))
		}
		tmp[k] = s
	}
	for k := 0; k < n; k++ {
		x[off+k*stride] = tmp[k]
	}
}

func dft2(x []complex128, M, N int, sign float64) {
	for i := 0; i < M; i++ {
		dft1(x, i*N, 1, N, sign)
	}
	for j := 0; j < N; j++ {
		dft1(x, j, N, M, sign)
	}
}

// coarsen takes a spatial M×N filter to resolution r: its spectrum restricted to the
// frequencies −M/2^(r+1) ≤ k < M/2^(r+1) (per axis), read as a spectrum on the coarse grid.
func coarsen(h []complex128, M, N, r int) refFilter {
	if r == 0 {
		return refFilter{M, N, append([]complex128(nil), h...)}
	}
	spec := append([]complex128(nil), h...)
	dft2(spec, M, N, -1)
	m, n := M>>r, N>>r
	c := make([]complex128, m*n)
	for a := -m / 2; a < m/2; a++ {
		for b := -n / 2; b < n/2; b++ {
			c[((a+m)%m)*n+(b+n)%n] = spec[((a+M)%M)*N+(b+N)%N]
		}
	}
	dft2(c, m, n, +1)
	for i := range c {
		c[i] /= complex(float64(m*n), 0)
	}
	return refFilter{m, n, c}
}

// convSub is the circular convolution of the m×n grid x with f, read at every k-th pixel.
func convSub(x []complex128, f refFilter, k int) []complex128 {
	m, n := f.m, f.n
	cm, cn := m/k, n/k
	out := make([]complex128, cm*cn)
	for p := 0; p < cm; p++ {
		for q := 0; q < cn; q++ {
			var s complex128
			for i := 0; i < m; i++ {
				di := ((p*k-i)%m + m) % m
				for j := 0; j < n; j++ {
					s += x[i*n+j] * f.h[di*n+((q*k-j)%n+n)%n]
				}
			}
			out[p*cn+q] = s
		}
	}
	return out
}

func absGrid(x []complex128) []complex128 {
	out := make([]complex128, len(x))
	for i, v := range x {
		out[i] = complex(cmplx.Abs(v), 0)
	}
	return out
}

// referenceScattering computes the order-2 transform of one H×W channel in float64.
func referenceScattering(img []float64, H, W, J, L int) [][]float64 {
	step := 1 << J
	M := ((H+step)/step + 1) * step
	N := ((W+step)/step + 1) * step
	top, left := (M-H)/2, (N-W)/2
	mirror := func(i, n int) int {
		if i < 0 {
			return -i
		}
		if i >= n {
			return 2*(n-1) - i
		}
		return i
	}
	x := make([]complex128, M*N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			x[i*N+j] = complex(img[mirror(i-top, H)*W+mirror(j-left, W)], 0)
		}
	}
	phi0 := hermitian(Gabor2D(M, N, 0.8*math.Exp2(float64(J-1)), 0, 0, 1), M, N)
	phi := make([]refFilter, J)
	for r := range phi {
		phi[r] = coarsen(phi0, M, N, r)
	}
	type wav struct {
		j      int
		levels []refFilter
	}
	var psi []wav
	for j := 0; j < J; j++ {
		for l := 0; l < L; l++ {
			theta := float64(int(float64(L)-float64(L)/2-1)-l) * math.Pi / float64(L)
			h := hermitian(Morlet2D(M, N, 0.8*math.Exp2(float64(j)), theta, 0.75*math.Pi/math.Exp2(float64(j)), 4/float64(L)), M, N)
			w := wav{j: j}
			for r := 0; r <= j && r < J-1 || r == 0; r++ {
				w.levels = append(w.levels, coarsen(h, M, N, r))
			}
			psi = append(psi, w)
		}
	}
	unpad := func(g []complex128) []float64 {
		cm, cn := M>>J, N>>J
		var out []float64
		for i := 1; i < cm-1; i++ {
			for j := 1; j < cn-1; j++ {
				out = append(out, real(g[i*cn+j]))
			}
		}
		return out
	}
	S0 := [][]float64{unpad(convSub(x, phi[0], step))}
	var S1, S2 [][]float64
	for _, p1 := range psi {
		u1 := absGrid(convSub(x, p1.levels[0], 1<<p1.j))
		S1 = append(S1, unpad(convSub(u1, phi[p1.j], 1<<(J-p1.j))))
		for _, p2 := range psi {
			if p2.j <= p1.j {
				continue
			}
			u2 := absGrid(convSub(u1, p2.levels[p1.j], 1<<(p2.j-p1.j)))
			S2 = append(S2, unpad(convSub(u2, phi[p2.j], 1<<(J-p2.j))))
		}
	}
	// Kymatio's layout: order 0, then every order-1 path, then every order-2 path.
	return append(append(S0, S1...), S2...)
}

// testImage is a smooth random image with edges: a few Gaussian blobs and a step, values
// roughly in [0, 1], like a natural image patch.
func testImage(rng *rand.Rand, H, W int) []float64 {
	img := make([]float64, H*W)
	for b := 0; b < 4; b++ {
		ci, cj := rng.Float64()*float64(H), rng.Float64()*float64(W)
		s := 1.5 + 3*rng.Float64()
		a := rng.Float64()
		for i := 0; i < H; i++ {
			for j := 0; j < W; j++ {
				d := (float64(i)-ci)*(float64(i)-ci) + (float64(j)-cj)*(float64(j)-cj)
				img[i*W+j] += a * math.Exp(-d/(2*s*s))
			}
		}
	}
	edge := rng.IntN(W)
	for i := 0; i < H; i++ {
		for j := edge; j < W; j++ {
			img[i*W+j] += 0.3
		}
	}
	return img
}

// transform64 runs the package's transform on one channel in float64 (the worker path,
// without the float32 batch interface).
func transform64(t *testing.T, s *Scattering, img []float64) [][]float64 {
	t.Helper()
	w := s.newWorker()
	w.channel(img, w.out)
	area := len(w.out) / s.Channels()
	out := make([][]float64, s.Channels())
	for k := range out {
		out[k] = append([]float64(nil), w.out[k*area:(k+1)*area]...)
	}
	return out
}

func TestTransformMatchesDirectConvolution(t *testing.T) {
	cases := []struct{ J, L, H, W int }{
		{2, 8, 28, 28}, // Fashion-MNIST's setting
		{2, 8, 32, 30}, // CIFAR-10's size, and a width that is not a multiple of 2^J
		{3, 4, 16, 16}, // order-2 wavelets at a coarser resolution (j1 = 1)
	}
	if testing.Short() {
		cases = cases[2:]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		s, err := New(c.J, c.L, c.H, c.W)
		if err != nil {
			t.Fatal(err)
		}
		img := testImage(rng, c.H, c.W)
		want := referenceScattering(img, c.H, c.W, c.J, c.L)
		got := transform64(t, s, img)
		if len(want) != Channels(c.J, c.L) || len(got) != len(want) {
			t.Fatalf("%+v: %d reference paths, %d computed, want %d", c, len(want), len(got), Channels(c.J, c.L))
		}
		var worst float64
		for k := range want {
			if len(got[k]) != len(want[k]) {
				t.Fatalf("%+v path %d: %d values, reference %d", c, k, len(got[k]), len(want[k]))
			}
			for i := range want[k] {
				worst = math.Max(worst, math.Abs(got[k][i]-want[k][i]))
			}
		}
		t.Logf("%+v: max abs diff %.3g, S0[0]=%.4g S1[0]=%.4g S2[last]=%.4g", c, worst, want[0][0], want[1][0], want[len(want)-1][0])
		if worst > 1e-9 {
			t.Errorf("%+v: max |FFT − direct| = %.3g, want ≤ 1e-9", c, worst)
		}
	}
}
