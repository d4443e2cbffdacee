package prior

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/parallel"
)

// newtonMinFloor is the smallest floor newtonMap takes: the iteration count grows with
// log(1/floor), and below it the covariance's round-off (about 10⁻⁶·λ₁, negative
// eigenvalues included) could make C + floor·λ₁·I indefinite.
const newtonMinFloor = 1e-4

// errNotConverged says that newtonMap gave up; whiteningMap then decomposes.
var errNotConverged = errors.New("prior: the Newton–Schulz iteration did not converge")

// newtonTol is the root-mean-square distance of Z·Y's eigenvalues from 1 (‖I − Z·Y‖_F/√d)
// at which the iteration surely ends (float32 products usually stop it earlier, where it
// stops shrinking quadratically).
const newtonTol = 1e-7

// newtonMaxSteps bounds the iteration: for floor ≥ newtonMinFloor it needs about 10.
const newtonMaxSteps = 40

// newtonMap is whiteningMap without an eigen-decomposition: λ₁ by Lanczos iteration
// (topEigenvalue), then Z = (A/c)^(−1/2) for A = C + floor·λ₁·I and c ≥ the largest
// eigenvalue of A by the coupled Newton–Schulz iteration (Higham, Functions of Matrices,
// 2008, eq. 6.35; stable, converging for every spectrum of A/c in (0, 1])
//
//	Y₀ = A/c, Z₀ = I;  T = (3I − Z·Y)/2,  Y ← Y·T,  Z ← T·Z,
//
// three float32 products of d × d matrices a step (internal/gemm, on every core), the
// first steps scaled (newtonScales: 8 steps for floor 10⁻³), until Z·Y is I to float32
// rounding. The map is s·Z/√c, s from traces instead of eigenvalues: with M₀ = A^(−1/2),
// E‖x·M₀‖² = tr(M₀·C·M₀) + ‖M₀·μ‖² = d − floor·λ₁·‖M₀‖²_F + ‖M₀·μ‖². Negative
// eigenvalues of C (round-off, at most about 10⁻⁶·λ₁) are used as they are, where
// eigenMap takes them as 0. The float32 products leave the map about 10⁻⁵ (floor 10⁻³)
// relative from eigenMap's (TestNewtonMatchesEigen), of the order of what the
// covariance's own float32 sums leave uncertain. It stops with ctx's error
// within one block of a product once ctx is done, and returns errNotConverged if the iteration does not converge.
func newtonMap(ctx context.Context, dim int, cov, mu []float64, meanSq, floor float64, progress Progress) ([]float32, error) {
	top, err := topEigenvalue(ctx, dim, cov)
	if err != nil {
		return nil, err
	}
	if !(top > 0) || math.IsInf(top, 0) {
		return nil, noVariance(top)
	}
	c := top * (1 + floor) * (1 + 1e-6)
	n := dim * dim
	y, z := make([]float32, n), make([]float32, n)
	for i := range dim {
		for j := range dim {
			v := cov[i*dim+j]
			if i == j {
				v += floor * top
				z[i*dim+i] = 1
			}
			y[i*dim+j] = float32(v / c)
		}
	}
	// A's eigenvalues are at least floor·λ₁ less C's round-off (about 10⁻⁶·λ₁).
	scales := newtonScales(max(floor-1e-5, floor/2) * top / c)
	steps := len(scales) + 2 // one to see Z·Y at I, one to see it stop shrinking
	p, t, tmp := make([]float32, n), make([]float32, n), make([]float32, n)
	prev := math.Inf(1)
	zScale := 1.0 // Z → (zScale·A/c)^(−1/2)
	for step := 0; ; step++ {
		if step == newtonMaxSteps {
			return nil, errNotConverged
		}
		progress("inverse square root", min(3*step, 3*steps-1), 3*steps)
		if err := mulContext(ctx, dim, p, z, y); err != nil {
			return nil, err
		}
		lambda := 1.0
		if step < len(scales) {
			lambda = scales[step]
		}
		zScale *= lambda
		res := 0.0
		for i, v := range p {
			v *= float32(lambda)
			id := float32(0)
			if i%(dim+1) == 0 {
				id = 1
			}
			res += float64(id-v) * float64(id-v)
			t[i] = (3*id - v) / 2
		}
		if math.IsNaN(res) || res > 9*float64(dim) { // eigenvalues of λ·Z·Y beyond (−2, 4): diverging
			return nil, errNotConverged
		}
		progress("inverse square root", min(3*step+1, 3*steps-1), 3*steps)
		if err := mulContext(ctx, dim, tmp, t, z); err != nil {
			return nil, err
		}
		z, tmp = tmp, z
		// Done once Z·Y is I to float32 rounding: its eigenvalues' root-mean-square
		// distance from 1 small, and no longer shrinking quadratically (float32 products
		// leave about 10⁻⁶·√d of it), or after two steps more than planned.
		res = math.Sqrt(res / float64(dim))
		if res <= newtonTol || res < 1e-3 && (res > prev/8 || step >= steps) {
			break
		}
		prev = res
		progress("inverse square root", min(3*step+2, 3*steps-1), 3*steps)
		if err := mulContext(ctx, dim, tmp, y, t); err != nil {
			return nil, err
		}
		y, tmp = tmp, y
		if lambda != 1 {
			for i := range y {
				y[i] *= float32(lambda)
			}
		}
	}
	progress("inverse square root", 3*steps, 3*steps)
	// M₀ = Z/√c, symmetrised (Z is symmetric up to rounding).
	zd := z
	m0 := make([]float64, dim*dim)
	frob := 0.0
	for i := range dim {
		for j := range dim {
			v := (float64(zd[i*dim+j]) + float64(zd[j*dim+i])) / 2 * math.Sqrt(zScale/c)
			m0[i*dim+j] = v
			frob += v * v
		}
	}
	mapped := float64(dim) - floor*top*frob
	for i := range dim {
		proj := 0.0
		for j := range dim {
			proj += m0[i*dim+j] * mu[j]
		}
		mapped += proj * proj
	}
	s := math.Sqrt(meanSq / mapped)
	if !(s > 0) || math.IsInf(s, 0) {
		return nil, badScale(s, floor, top)
	}
	for i := range m0 {
		m0[i] *= s
	}
	return toFloat32(m0, floor)
}

// newtonScales is the scale λ of each step of the iteration (its length the number of
// steps, until one more step ends it) when the eigenvalues of A/c lie in [lo, 1]: each
// step maps an eigenvalue p of Z·Y to g(λp), g(p) = p·(3 − p)²/4 (Y ← λ·Y·T, T = (3I −
// λ·Z·Y)/2, Z ← T·Z, so that Z tends to (Πλ·A/c)^(−1/2)), and while the smallest is below
// 1/2, λ ∈ [1, 2.8/u] maximises the smallest g(λp) over the interval [l, u] of the
// eigenvalues (where g(λl) = g(λu); g rises to 1 at 1 and falls to 0 at 3): about three
// times as far a step as the plain iteration's (λ = 1), which then ends it
// quadratically. Fewer steps: 8 instead of 13 for floor 10⁻³.
func newtonScales(lo float64) []float64 {
	g := func(p float64) float64 { return p * (3 - p) * (3 - p) / 4 }
	var scales []float64
	l, u := lo, 1.0
	for len(scales) < newtonMaxSteps {
		if 1-l <= newtonTol/4 && u-1 <= newtonTol/4 {
			return scales
		}
		lambda := 1.0
		if l < 0.5 {
			a, b := 1.0, 2.8/u
			if g(b*l) < g(b*u) {
				lambda = b
			} else {
				for range 60 {
					m := (a + b) / 2
					if g(m*l) < g(m*u) {
						a = m
					} else {
						b = m
					}
				}
				lambda = a
			}
		}
		scales = append(scales, lambda)
		pl, pu := lambda*l, lambda*u
		l = min(g(pl), g(pu))
		if pl <= 1 && 1 <= pu {
			u = 1
		} else {
			u = max(g(pl), g(pu))
		}
	}
	return scales
}

// mulContext sets dst = a·b for dim × dim row-major float32 matrices (the project's
// GEMM, blocks of rows on every core), returning ctx's error, dst unfinished, once ctx
// is done: within one block.
func mulContext(ctx context.Context, dim int, dst, a, b []float32) error {
	parallel.For(runtime.GOMAXPROCS(0), dim, parallelRows, func(_, r0, r1 int) {
		if ctx.Err() != nil {
			return
		}
		gemm.Gemm(r1-r0, dim, dim, gemm.Matrix[float32]{Data: a[r0*dim:], Stride: dim}, b, dim, dst[r0*dim:], dim, nil, 0)
	})
	return ctx.Err()
}

// lanczosMax bounds the Lanczos steps of topEigenvalue.
const lanczosMax = 300

// topEigenvalue is the largest eigenvalue of the symmetric dim × dim matrix cov (full,
// row-major) by Lanczos iteration with full reorthogonalisation from a fixed random
// start, to a residual ‖C·v − θ·v‖ ≤ 10⁻¹²·θ (which bounds |θ − λ₁|, and by far less where
// λ₁ is apart from λ₂). 0 when cov is 0.
func topEigenvalue(ctx context.Context, dim int, cov []float64) (float64, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, dim)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	scaleTo1(v)
	var basis [][]float64
	var alpha, beta []float64
	w := make([]float64, dim)
	theta := 0.0
	for k := 0; k < min(dim, lanczosMax); k++ {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		basis = append(basis, v)
		parallel.For(runtime.GOMAXPROCS(0), dim, 256, func(_, r0, r1 int) {
			for i := r0; i < r1; i++ {
				s := 0.0
				row := cov[i*dim : (i+1)*dim]
				for j, x := range row {
					s += x * v[j]
				}
				w[i] = s
			}
		})
		a := dot(w, v)
		alpha = append(alpha, a)
		for range 2 { // twice is enough (Kahan–Parlett)
			for _, u := range basis {
				d := dot(w, u)
				for i := range w {
					w[i] -= d * u[i]
				}
			}
		}
		b := math.Sqrt(dot(w, w))
		// The Ritz values of the tridiagonal T: its largest and the residual of its vector.
		kk := len(alpha)
		t := mat.NewSymDense(kk, nil)
		for i := range kk {
			t.SetSym(i, i, alpha[i])
			if i+1 < kk {
				t.SetSym(i, i+1, beta[i])
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(t, true) {
			return 0, errors.New("prior: the Lanczos tridiagonal's eigen-decomposition did not converge")
		}
		vals := eig.Values(nil)
		theta = vals[kk-1]
		var vecs mat.Dense
		eig.VectorsTo(&vecs)
		res := math.Abs(b * vecs.At(kk-1, kk-1))
		if res <= 1e-12*math.Abs(theta) || b <= 1e-300 || kk == dim {
			return theta, nil
		}
		beta = append(beta, b)
		next := make([]float64, dim)
		for i := range next {
			next[i] = w[i] / b
		}
		v = next
	}
	return theta, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

func scaleTo1(v []float64) {
	n := math.Sqrt(dot(v, v))
	for i := range v {
		v[i] /= n
	}
}
