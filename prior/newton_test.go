package prior

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// testCovariance is the covariance (full, row-major) of n random rows x = z·Lᵀ with a
// spectrum decaying like image features (scale 1/(1+i)², rank at most n, the last
// `zero` directions without variance, as a GroupNorm's), their mean mu and E‖x‖².
func testCovariance(dim, n, zero int, seed uint64) (cov, mu []float64, meanSq float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	l := make([]float64, dim*dim)
	for i := range dim {
		for j := range dim - zero {
			l[i*dim+j] = rng.NormFloat64() / float64(1+j) / math.Sqrt(float64(dim))
		}
	}
	mu = make([]float64, dim)
	for j := range mu {
		mu[j] = rng.NormFloat64() * 0.3
	}
	cov = make([]float64, dim*dim)
	mean := make([]float64, dim)
	x := make([]float64, dim)
	rows := make([][]float64, n)
	for r := range n {
		z := make([]float64, dim)
		for j := range z {
			z[j] = rng.NormFloat64()
		}
		for i := range dim {
			s := mu[i]
			for j := range dim {
				s += l[i*dim+j] * z[j]
			}
			x[i] = s
			mean[i] += s / float64(n)
		}
		rows[r] = append([]float64(nil), x...)
	}
	for _, x := range rows {
		for i := range dim {
			meanSq += x[i] * x[i] / float64(n)
			for j := range dim {
				cov[i*dim+j] += (x[i] - mean[i]) * (x[j] - mean[j]) / float64(n)
			}
		}
	}
	return cov, mean, meanSq
}

// relDiff is ‖a − b‖_F/‖b‖_F and max|a − b|/max|b|.
func relDiff(a, b []float32) (frob, maxEntry float64) {
	var num, den, mx, mb float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
		mx = max(mx, math.Abs(d))
		mb = max(mb, math.Abs(float64(b[i])))
	}
	return math.Sqrt(num / den), mx / mb
}

// TestNewtonMatchesEigen: the Newton–Schulz map, iterated in float32, is the
// eigen-decomposition's (the code that computed every map before it, kept as the
// oracle) to 3·10⁻⁵ of the map's Frobenius norm and of its largest entry for floors of
// 10⁻³ and more (3·10⁻⁴ for 10⁻⁴), for a small and a moderate dimension, with and without
// directions of no variance. For scale: rounding these covariances to float32 moves the
// eigen-decomposition's map by about 10⁻⁶ (floor 10⁻³) and 10⁻⁴ (floor 10⁻⁵), and the
// prior's covariance, summed from float32 products, is 10⁻⁶·λ₁ from exact.
func TestNewtonMatchesEigen(t *testing.T) {
	for _, tc := range []struct {
		dim, n, zero int
		floor        float64
	}{
		{30, 200, 0, 1e-3}, {30, 200, 5, 1e-4}, {30, 20, 0, 0.3}, {60, 400, 9, 1e-3},
		{400, 1000, 40, 1e-3},
	} {
		if tc.dim > 100 && testing.Short() {
			continue
		}
		cov, mu, msq := testCovariance(tc.dim, tc.n, tc.zero, uint64(tc.dim+tc.zero))
		ctx := context.Background()
		want, err := eigenMap(ctx, tc.dim, cov, mu, msq, tc.floor, func(string, int, int) {})
		if err != nil {
			t.Fatal(err)
		}
		got, err := newtonMap(ctx, tc.dim, cov, mu, msq, tc.floor, func(string, int, int) {})
		if err != nil {
			t.Fatal(err)
		}
		frob, mx := relDiff(got, want)
		t.Logf("d %d, floor %g: relative difference %.2g (Frobenius), %.2g (largest entry)", tc.dim, tc.floor, frob, mx)
		tol := 3e-5
		if tc.floor < 1e-3 {
			tol = 3e-4
		}
		if frob > tol || mx > tol {
			t.Errorf("d %d, %d rows, %d null directions, floor %g: Newton–Schulz map differs from the eigen-decomposition's by %.3g relative (Frobenius), %.3g of the largest entry", tc.dim, tc.n, tc.zero, tc.floor, frob, mx)
		}
	}
}

// TestNewtonDiagonal: for a diagonal C = diag(λ) and mean 0 the map is diagonal,
// s/√(λᵢ + floor·λ₁), s² = Σλᵢ / Σ λᵢ/(λᵢ + floor·λ₁) (closed form).
func TestNewtonDiagonal(t *testing.T) {
	const dim, floor = 7, 1e-3
	lam := []float64{9, 4, 1, 0.25, 0.01, 1e-4, 0}
	cov := make([]float64, dim*dim)
	sum, ratio := 0.0, 0.0
	for i, l := range lam {
		cov[i*dim+i] = l
		sum += l
		ratio += l / (l + floor*9)
	}
	M, err := newtonMap(context.Background(), dim, cov, make([]float64, dim), sum, floor, func(string, int, int) {})
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(sum / ratio)
	for i := range dim {
		for j := range dim {
			want := 0.0
			if i == j {
				want = s / math.Sqrt(lam[i]+floor*9)
			}
			if got := float64(M[i*dim+j]); math.Abs(got-want) > 1e-5*math.Abs(want)+1e-6 {
				t.Errorf("M[%d][%d] = %.9g, want %.9g", i, j, got, want)
			}
		}
	}
}

// TestTopEigenvalue: Lanczos finds the largest eigenvalue of C = Q·diag(λ)·Qᵀ, a known
// spectrum in a random basis, to 10⁻¹² relative, also with a close second eigenvalue.
func TestTopEigenvalue(t *testing.T) {
	const dim = 50
	for _, second := range []float64{3, 4.999} {
		lam := make([]float64, dim)
		for i := range lam {
			lam[i] = 1 / float64(1+i)
		}
		lam[0], lam[1] = 5, second
		sigma := make([]float64, dim)
		for i, l := range lam {
			sigma[i] = math.Sqrt(l * dim) // knownRows: eigenvalues σᵢ²/d
		}
		x := knownRows(dim, 1, sigma, make([]float64, dim), 3)
		n := len(x) / dim
		cov := make([]float64, dim*dim)
		for r := range n {
			for i := range dim {
				for j := range dim {
					cov[i*dim+j] += float64(x[r*dim+i]) * float64(x[r*dim+j]) / float64(n)
				}
			}
		}
		// x holds float32 rows: the covariance's top eigenvalue is 5 to float32 rounding.
		got, err := topEigenvalue(context.Background(), dim, cov)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-5) > 1e-5 {
			t.Errorf("second eigenvalue %g: largest %v, want 5", second, got)
		}
		ref, err := eigenTop(dim, cov)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-ref) > 1e-12*ref {
			t.Errorf("second eigenvalue %g: Lanczos %v, eigen-decomposition %v", second, got, ref)
		}
	}
}

// TestNewtonSteps: the progress counts the products of the predicted steps, three a
// step, up to the end, never past it.
func TestNewtonSteps(t *testing.T) {
	cov, mu, msq := testCovariance(30, 200, 0, 2)
	last, total, back := 0, 0, false
	_, err := newtonMap(context.Background(), 30, cov, mu, msq, 1e-3, func(stage string, done, n int) {
		back = back || done < last || done > n
		last, total = done, n
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * (len(newtonScales((1e-3-1e-5)/1.001)) + 2); total != want || last != want || back {
		t.Errorf("progress ended at %d of %d (went back or past the end: %v), want %d of %d", last, total, back, want, want)
	}
	// The scalar recursion the schedule plans with, run here without scales: p ← p·(3 −
	// p)²/4 from 10⁻³ takes 13 steps to 1 (log(1000)/log(2.25) + 4); scaled, fewer.
	p, plain := 1e-3, 0
	for ; 1-p > newtonTol/4; plain++ {
		p *= (3 - p) * (3 - p) / 4
	}
	if n := len(newtonScales(1e-3)); plain != 13 || n >= plain || n < 5 {
		t.Errorf("%d scaled steps, %d plain ones: want fewer scaled than the 13 plain", n, plain)
	}
}

// TestWhiteningStopsWhenCancelled: a cancelled context ends the covariance, the Lanczos
// and the Newton–Schulz phases with its error.
func TestWhiteningStopsWhenCancelled(t *testing.T) {
	cov, mu, msq := testCovariance(200, 300, 0, 4)
	ctx, cancel := context.WithCancel(context.Background())
	var stages []string
	_, err := newtonMap(ctx, 200, cov, mu, msq, 1e-3, func(stage string, done, total int) {
		stages = append(stages, stage)
		if done == 2 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled during the iteration: %v, want context.Canceled", err)
	}
	if _, err := topEigenvalue(ctx, 200, cov); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lanczos: %v", err)
	}
	x := make([]float32, 10*512*4)
	_, err = WhiteningContext(ctx, 10*512, 4, rowsOf(x, 4), 0.01, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled covariance: %v", err)
	}
}

// eigenTop is the largest eigenvalue by gonum's decomposition.
func eigenTop(dim int, cov []float64) (float64, error) {
	var e mat.EigenSym
	if !e.Factorize(mat.NewSymDense(dim, append([]float64(nil), cov...)), false) {
		return 0, errors.New("no convergence")
	}
	v := e.Values(nil)
	return v[dim-1], nil
}
