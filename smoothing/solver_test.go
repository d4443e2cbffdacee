package smoothing

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// denseA builds A_σ = I − σL entry by entry from the definition of the periodic Laplacian:
// row i of L gets −2 at i and +1 at each periodic neighbour i±1. For d = 1 the
// contributions cancel (A = [1]); for d = 2 both neighbours are the same point.
func denseA(d int, sigma float64) *mat.Dense {
	a := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		a.Set(i, i, a.At(i, i)+1+2*sigma)
		a.Set(i, (i+1)%d, a.At(i, (i+1)%d)-sigma)
		a.Set(i, (i+d-1)%d, a.At(i, (i+d-1)%d)-sigma)
	}
	return a
}

// denseSolve returns A_σ⁻¹v by LU factorisation of the dense matrix.
func denseSolve(t *testing.T, d int, sigma float64, v []float64) []float64 {
	t.Helper()
	var lu mat.LU
	lu.Factorize(denseA(d, sigma))
	var u mat.VecDense
	if err := lu.SolveVecTo(&u, false, mat.NewVecDense(d, append([]float64(nil), v...))); err != nil {
		t.Fatalf("dense solve d=%d σ=%v: %v", d, sigma, err)
	}
	out := make([]float64, d)
	for i := range out {
		out[i] = u.AtVec(i)
	}
	return out
}

func randomVector(rng *rand.Rand, d int) []float64 {
	v := make([]float64, d)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// maxAbsDiff returns max_i |a_i − b_i|.
func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func mustSolver(t testing.TB, d int, sigma float64) *Solver[float64] {
	t.Helper()
	s, err := NewSolver[float64](d, sigma)
	if err != nil {
		t.Fatalf("NewSolver(%d, %v): %v", d, sigma, err)
	}
	return s
}

func TestSolverMatchesDenseSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{1, 2, 3, 7, 64, 1000} {
		for _, sigma := range []float64{0, 0.2, 1, 3, 10, 100} {
			t.Run(fmt.Sprintf("d=%d/σ=%v", d, sigma), func(t *testing.T) {
				v := randomVector(rng, d)
				want := denseSolve(t, d, sigma, v)
				got := make([]float64, d)
				if err := mustSolver(t, d, sigma).Solve(got, v); err != nil {
					t.Fatal(err)
				}
				if e := maxAbsDiff(got, want); e > 1e-12 {
					t.Errorf("max |tridiagonal − dense| = %g, want ≤ 1e-12", e)
				}
			})
		}
	}
}

// The explicit vectors of the seeds digest §1.5, printed to 6 decimals there.
func TestSolverDigestVectors(t *testing.T) {
	third := 1.0 / 3
	cases := []struct {
		d     int
		sigma float64
		v     []float64
		want  []float64
	}{
		{4, 1, []float64{1, 0, 0, 0}, []float64{0.466667, 0.2, 0.133333, 0.2}},
		{5, 1, []float64{1, 0, 0, 0, 0}, []float64{0.454545, 0.181818, 0.090909, 0.090909, 0.181818}},
		{5, 2, []float64{1, 2, 3, 4, 5}, []float64{2.612903, 2.645161, 3.0, 3.354839, 3.387097}},
		{8, 0.5, []float64{1, -1, 1, -1, 1, -1, 1, -1},
			[]float64{third, -third, third, -third, third, -third, third, -third}},
		{6, 3, []float64{0, 0, 1, 0, 0, 0}, []float64{0.121154, 0.178846, 0.296154, 0.178846, 0.121154, 0.103846}},
		{2, 1, []float64{1, 0}, []float64{0.6, 0.4}},
	}
	for _, c := range cases {
		for _, impl := range []string{"tridiagonal", "fft"} {
			got := make([]float64, c.d)
			var err error
			if impl == "fft" {
				var f *FFTSolver
				if f, err = NewFFTSolver(c.d, c.sigma); err == nil {
					err = f.Solve(got, c.v)
				}
			} else {
				err = mustSolver(t, c.d, c.sigma).Solve(got, c.v)
			}
			if err != nil {
				t.Fatal(err)
			}
			if e := maxAbsDiff(got, c.want); e > 5e-7 {
				t.Errorf("%s d=%d σ=%v v=%v: got %v, want %v (max diff %g)", impl, c.d, c.sigma, c.v, got, c.want, e)
			}
		}
	}
}

func TestSolverProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range []int{1, 2, 3, 4, 5, 10, 101, 26010} {
		for _, sigma := range []float64{0, 0.2, 1, 10, 1000} {
			s := mustSolver(t, d, sigma)
			u := make([]float64, d)

			// A⁻¹1 = 1 (rows of A sum to 1).
			ones := make([]float64, d)
			for i := range ones {
				ones[i] = 1
			}
			if err := s.Solve(u, ones); err != nil {
				t.Fatal(err)
			}
			if e := maxAbsDiff(u, ones); e > 1e-12 {
				t.Errorf("d=%d σ=%v: max |A⁻¹1 − 1| = %g", d, sigma, e)
			}

			// The mean (sum) is preserved.
			v := randomVector(rng, d)
			if err := s.Solve(u, v); err != nil {
				t.Fatal(err)
			}
			sv, su, scale := 0.0, 0.0, 0.0
			for i := range v {
				sv += v[i]
				su += u[i]
				scale += math.Abs(v[i])
			}
			if math.Abs(sv-su) > 1e-12*scale {
				t.Errorf("d=%d σ=%v: Σv = %v, ΣA⁻¹v = %v", d, sigma, sv, su)
			}

			// Residual: A u = v, with A applied from its definition in O(d).
			if e := maxAbsDiff(applyA(sigma, u), v); e > 1e-11 {
				t.Errorf("d=%d σ=%v: max |A·A⁻¹v − v| = %g", d, sigma, e)
			}

			// The alternating vector is an eigenvector with eigenvalue 1 + 4σ (d even).
			if d%2 == 0 {
				alt := make([]float64, d)
				for i := range alt {
					alt[i] = 1 - 2*float64(i%2)
				}
				if err := s.Solve(u, alt); err != nil {
					t.Fatal(err)
				}
				for i := range alt {
					alt[i] /= 1 + 4*sigma
				}
				if e := maxAbsDiff(u, alt); e > 1e-12 {
					t.Errorf("d=%d σ=%v: alternating vector not scaled by 1/(1+4σ): max diff %g", d, sigma, e)
				}
			}

			// σ = 0 is exactly the identity.
			if sigma == 0 {
				if err := s.Solve(u, v); err != nil {
					t.Fatal(err)
				}
				for i := range v {
					if u[i] != v[i] {
						t.Fatalf("d=%d σ=0: u[%d] = %v, want %v exactly", d, i, u[i], v[i])
					}
				}
			}
		}
	}
}

// applyA returns A_σ u, computed as u − σ·(periodic second difference of u).
func applyA(sigma float64, u []float64) []float64 {
	d := len(u)
	out := make([]float64, d)
	for i := range u {
		lap := u[(i+1)%d] + u[(i+d-1)%d] - 2*u[i]
		out[i] = u[i] - sigma*lap
	}
	return out
}

// The first column of A_σ⁻¹ is the closed-form kernel
// K_k = (ω^k + ω^(d−k)) / ((1 − ω^d)·√(1+4σ)) (digest §1.2), and K_0 = γ(σ, d).
func TestSolverKernel(t *testing.T) {
	for _, d := range []int{3, 4, 9, 50, 1000} {
		for _, sigma := range []float64{0.2, 1, 5, 30} {
			s := math.Sqrt(1 + 4*sigma)
			omega := (2*sigma + 1 - s) / (2 * sigma)
			e0 := make([]float64, d)
			e0[0] = 1
			u := make([]float64, d)
			if err := mustSolver(t, d, sigma).Solve(u, e0); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, d)
			for k := range want {
				want[k] = (math.Pow(omega, float64(k)) + math.Pow(omega, float64(d-k))) /
					((1 - math.Pow(omega, float64(d))) * s)
			}
			if e := maxAbsDiff(u, want); e > 1e-12 {
				t.Errorf("d=%d σ=%v: first column differs from kernel by %g", d, sigma, e)
			}
			g, err := GammaSum(sigma, d)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(u[0]-g) > 1e-12 {
				t.Errorf("d=%d σ=%v: (A⁻¹)₀₀ = %v, γ = %v", d, sigma, u[0], g)
			}
		}
	}
}

func TestSolverFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{1, 2, 3, 64, 7850} {
		for _, sigma := range []float64{0, 1, 10} {
			v64 := randomVector(rng, d)
			v32 := make([]float32, d)
			for i := range v64 {
				v32[i] = float32(v64[i])
				v64[i] = float64(v32[i]) // compare on the same (float32) input
			}
			want := make([]float64, d)
			if err := mustSolver(t, d, sigma).Solve(want, v64); err != nil {
				t.Fatal(err)
			}
			s32, err := NewSolver[float32](d, sigma)
			if err != nil {
				t.Fatal(err)
			}
			if err := s32.Solve(v32, v32); err != nil { // in place
				t.Fatal(err)
			}
			for i := range want {
				// Only the final rounding to float32 differs.
				if math.Abs(float64(v32[i])-want[i]) > 1e-7*math.Max(1, math.Abs(want[i])) {
					t.Fatalf("d=%d σ=%v: float32 u[%d] = %v, float64 %v", d, sigma, i, v32[i], want[i])
				}
			}
		}
	}
}

func TestSolverInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{1, 2, 3, 100} {
		s := mustSolver(t, d, 2)
		v := randomVector(rng, d)
		want := make([]float64, d)
		if err := s.Solve(want, v); err != nil {
			t.Fatal(err)
		}
		if err := s.Solve(v, v); err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if v[i] != want[i] {
				t.Fatalf("d=%d: in-place result differs at %d: %v vs %v", d, i, v[i], want[i])
			}
		}
	}
}

func TestSolverErrors(t *testing.T) {
	for _, c := range []struct {
		d     int
		sigma float64
	}{{0, 1}, {-3, 1}, {5, -0.1}, {5, math.NaN()}, {5, math.Inf(1)}} {
		if _, err := NewSolver[float64](c.d, c.sigma); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewSolver(%d, %v): err = %v, want ErrInvalid", c.d, c.sigma, err)
		}
		if _, err := NewFFTSolver(c.d, c.sigma); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewFFTSolver(%d, %v): err = %v, want ErrInvalid", c.d, c.sigma, err)
		}
	}
	s := mustSolver(t, 4, 1)
	if err := s.Solve(make([]float64, 4), make([]float64, 3)); !errors.Is(err, ErrLength) {
		t.Errorf("short v: err = %v, want ErrLength", err)
	}
	if err := s.Solve(make([]float64, 5), make([]float64, 4)); !errors.Is(err, ErrLength) {
		t.Errorf("long dst: err = %v, want ErrLength", err)
	}
	f, _ := NewFFTSolver(4, 1)
	if err := f.Solve(make([]float64, 4), make([]float64, 3)); !errors.Is(err, ErrLength) {
		t.Errorf("FFT short v: err = %v, want ErrLength", err)
	}
}

func TestSolverDoesNotAllocate(t *testing.T) {
	for _, d := range []int{2, 26010} {
		s := mustSolver(t, d, 1)
		v := randomVector(rand.New(rand.NewPCG(9, 10)), d)
		if n := testing.AllocsPerRun(10, func() { _ = s.Solve(v, v) }); n != 0 {
			t.Errorf("d=%d: Solve allocates %v times per call", d, n)
		}
	}
}

func BenchmarkSolver(b *testing.B) {
	for _, d := range []int{26010, 1000000} {
		b.Run(fmt.Sprintf("float64/d=%d", d), func(b *testing.B) {
			s := mustSolver(b, d, 1)
			v := randomVector(rand.New(rand.NewPCG(1, 1)), d)
			b.SetBytes(int64(8 * d))
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Solve(v, v)
			}
		})
		b.Run(fmt.Sprintf("float32/d=%d", d), func(b *testing.B) {
			s, _ := NewSolver[float32](d, 1)
			v := make([]float32, d)
			for i := range v {
				v[i] = float32(i % 7)
			}
			b.SetBytes(int64(4 * d))
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Solve(v, v)
			}
		})
	}
}

func BenchmarkFFTSolver(b *testing.B) {
	for _, d := range []int{26010, 1 << 20} {
		b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
			f, _ := NewFFTSolver(d, 1)
			v := randomVector(rand.New(rand.NewPCG(1, 1)), d)
			b.ReportAllocs()
			for b.Loop() {
				_ = f.Solve(v, v)
			}
		})
	}
}
