package prior

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/parallel"
)

// MaxDim bounds the dimension of a whitening map: its computation costs O(d³) (a few
// minutes for d = 3,969 on two cores) and the map 4·d² bytes (63 MB).
const MaxDim = 4096

// MinFloor is the smallest floor Whitening takes: below it the map's scale would leave
// float64's range for directions without variance (a GroupNorm's), and float32's
// covariance could not tell such small eigenvalues apart anyway.
const MinFloor = 1e-12

// Rows supplies the rows of the prior's feature matrix: it writes rows [lo, hi), dim
// values each, one after the other into dst.
type Rows func(lo, hi int, dst []float32) error

// Progress, when not nil, is told how far a long computation has come: stage names it
// ("covariance": the prior's images rendered, featurised and added up, done and total
// counting images; then "inverse square root", counting matrix products, or
// "eigen-decomposition" with no count), done of total units are finished (total 0: no
// count).
type Progress func(stage string, done, total int)

// whitenChunk is the number of rows of one covariance update.
const whitenChunk = 512

// Whitening returns the dim × dim map M (row-major, symmetric; a feature row x becomes
// x·M) that whitens the n rows of rows, the prior's features (ZCA whitening):
//
//	M = s · (C + floor·λ₁·I)^(−1/2) = s · V · diag(λ + floor·λ₁)^(−1/2) · Vᵀ
//
// for the rows' covariance C (centred, divided by n) and its eigen-decomposition
// V·diag(λ)·Vᵀ (λ₁ the largest eigenvalue). For floors of 10⁻⁴ and more it is computed
// without the decomposition, by Newton–Schulz iteration in float32 (newtonMap: minutes
// instead of a quarter of an hour for d = 3,969, to about 10⁻⁵ relative); below, and if
// that fails, from the decomposition (negative round-off taken as 0). Being a function
// of C, not of a basis, M does not depend on how eigenvectors of (nearly) equal
// eigenvalues come out rotated or flipped. floor ∈ [MinFloor, 1] smooths the directions of least
// variance, which would otherwise be scaled up without bound. s makes the mapped rows'
// root-mean-square norm equal the rows' own (from the mean μ and the covariance:
// E‖x‖² = tr C + ‖μ‖², E‖x·M‖² = s²·Σ (λⱼ + (vⱼ·μ)²) / (λⱼ + floor·λ₁)), so that a
// learning rate keeps its meaning. The rows are not centred by the map: M is linear.
// The covariance is summed in float32 products of chunks of rows, about 10⁻⁶·λ₁ of
// absolute error: below the floors this package is meant for.
//
// Everything here is computed from the prior's rows alone; the map is the same whatever
// data it is later applied to.
func Whitening(n, dim int, rows Rows, floor float64, progress Progress) ([]float32, error) {
	return WhiteningContext(context.Background(), n, dim, rows, floor, progress)
}

// WhiteningContext is Whitening that stops, with ctx's error, once ctx is done: between
// chunks of rows, within a block of a Newton–Schulz product, and during an
// eigen-decomposition (which goes on in the background until it ends, its result
// unused). It reports progress before the first chunk too, so
// that a long computation is announced before its first chunk is computed.
func WhiteningContext(ctx context.Context, n, dim int, rows Rows, floor float64, progress Progress) ([]float32, error) {
	if dim <= 0 || dim > MaxDim {
		return nil, fmt.Errorf("prior: whitening of %d features: want 1 to %d", dim, MaxDim)
	}
	if n < 2 {
		return nil, fmt.Errorf("prior: whitening from %d rows: want at least 2", n)
	}
	if !(floor >= MinFloor && floor <= 1) {
		return nil, fmt.Errorf("prior: whitening floor %v: want a number in [%g, 1]", floor, MinFloor)
	}
	if progress == nil {
		progress = func(string, int, int) {}
	}
	// S = Σ (x − c)(x − c)ᵀ and m = Σ (x − c) about c, the first chunk's mean, so that
	// the float32 products do not lose the covariance to a large mean.
	S := make([]float64, dim*dim)
	sum := make([]float64, dim)
	var shift []float64
	buf := make([]float32, whitenChunk*dim)
	prod := make([]float32, dim*dim)
	progress("covariance", 0, n)
	for lo := 0; lo < n; lo += whitenChunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(n, lo+whitenChunk)
		x := buf[:(hi-lo)*dim]
		if err := rows(lo, hi, x); err != nil {
			return nil, err
		}
		for i, v := range x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("prior: feature %d of prior row %d is %v", i%dim, lo+i/dim, v)
			}
		}
		if shift == nil {
			shift = make([]float64, dim)
			for i, v := range x {
				shift[i%dim] += float64(v)
			}
			for j := range shift {
				shift[j] /= float64(hi - lo)
			}
		}
		for i := range x {
			x[i] -= float32(shift[i%dim])
			sum[i%dim] += float64(x[i])
		}
		gramParallel(dim, hi-lo, x, prod)
		for i := range dim {
			r0 := i / parallelRows * parallelRows
			for j := r0; j < dim; j++ {
				S[i*dim+j] += float64(prod[i*dim+j])
			}
		}
		progress("covariance", hi, n)
	}
	mean := make([]float64, dim) // about shift
	for j := range mean {
		mean[j] = sum[j] / float64(n)
	}
	// gramParallel summed the upper triangle only; C is full and symmetric.
	cov := make([]float64, dim*dim)
	trace := 0.0
	for i := range dim {
		for j := i; j < dim; j++ {
			v := S[i*dim+j]/float64(n) - mean[i]*mean[j]
			cov[i*dim+j], cov[j*dim+i] = v, v
		}
		trace += cov[i*dim+i]
	}
	mu := make([]float64, dim) // the rows' mean
	meanSq := trace
	for j := range mu {
		mu[j] = shift[j] + mean[j]
		meanSq += mu[j] * mu[j]
	}
	return whiteningMap(ctx, dim, cov, mu, meanSq, floor, progress)
}

// whiteningMap is s·(C + floor·λ₁·I)^(−1/2) for the covariance cov (full, row-major), the
// rows' mean mu and their mean squared norm meanSq (E‖x‖²): by Newton–Schulz iteration
// (newtonMap) where floor ≥ newtonMinFloor, else, or where it fails, by the
// eigen-decomposition (eigenMap).
func whiteningMap(ctx context.Context, dim int, cov, mu []float64, meanSq, floor float64, progress Progress) ([]float32, error) {
	if floor >= newtonMinFloor {
		M, err := newtonMap(ctx, dim, cov, mu, meanSq, floor, progress)
		if !errors.Is(err, errNotConverged) {
			return M, err
		}
	}
	return eigenMap(ctx, dim, cov, mu, meanSq, floor, progress)
}

// eigenMap is whiteningMap by the eigen-decomposition C = V·diag(λ)·Vᵀ (gonum's, O(d³)
// with a large constant, about 15 minutes for d = 3,969 on two busy cores): the reference
// that newtonMap is tested against, and the way for floors below newtonMinFloor. Negative
// eigenvalues (round-off) are taken as 0. It stops once ctx is done, leaving the
// decomposition to end in the background, its result unused.
func eigenMap(ctx context.Context, dim int, cov, mu []float64, meanSq, floor float64, progress Progress) ([]float32, error) {
	progress("eigen-decomposition", 0, 0)
	var eig mat.EigenSym
	factorized := make(chan bool, 1)
	sym := mat.NewSymDense(dim, slices.Clone(cov))
	go func() { factorized <- eig.Factorize(sym, true) }()
	select {
	case ok := <-factorized:
		if !ok {
			return nil, errors.New("prior: the eigen-decomposition of the prior's covariance did not converge")
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	vals := eig.Values(nil) // ascending
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	top := vals[dim-1]
	if !(top > 0) || math.IsInf(top, 0) {
		return nil, noVariance(top)
	}
	// A = s·V·diag(w), then M = A·Vᵀ: the map is the matrix function s·(C + floor·λ₁·I)^(−1/2)
	// of the covariance, whatever basis the eigen-decomposition chose within a cluster of
	// (nearly) equal eigenvalues or whatever signs it gave its vectors.
	w := make([]float64, dim)
	mappedSq := 0.0
	for j := range dim {
		lam := max(vals[j], 0)
		w[j] = 1 / math.Sqrt(lam+floor*top)
		proj := 0.0
		for i := range dim {
			proj += vecs.At(i, j) * mu[i]
		}
		mappedSq += w[j] * w[j] * (lam + proj*proj)
	}
	s := math.Sqrt(meanSq / mappedSq)
	if !(s > 0) || math.IsInf(s, 0) {
		return nil, badScale(s, floor, top)
	}
	a := mat.NewDense(dim, dim, nil)
	for i := range dim {
		for j := range dim {
			a.Set(i, j, s*vecs.At(i, j)*w[j])
		}
	}
	var m mat.Dense
	m.Mul(a, vecs.T())
	return toFloat32(m.RawMatrix().Data, floor)
}

func noVariance(top float64) error {
	return fmt.Errorf("prior: the prior's features have no variance (largest eigenvalue %v)", top)
}

func badScale(s, floor, top float64) error {
	return fmt.Errorf("prior: whitening scale %v (floor %v too small for eigenvalues up to %v)", s, floor, top)
}

// toFloat32 is the map m (dim², row-major) in float32, or an error naming an entry
// that float32 cannot hold.
func toFloat32(m []float64, floor float64) ([]float32, error) {
	M := make([]float32, len(m))
	dim := int(math.Sqrt(float64(len(m))) + 0.5)
	for i, x := range m {
		v := float32(x)
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("prior: whitening map entry (%d, %d) is %v (floor %v too small)", i/dim, i%dim, v, floor)
		}
		M[i] = v
	}
	return M, nil
}

// gramParallel writes the upper triangle of xᵀx (dim × dim, row-major; entries (i, j)
// for j ≥ r0, r0 the first row of i's block of parallelRows) for the rows × dim matrix x
// into dst, blocks of its rows on every core (a value does not depend on the blocks):
// half the products of the full square, which the covariance does not need.
func gramParallel(dim, rows int, x, dst []float32) {
	parallel.For(runtime.GOMAXPROCS(0), dim, parallelRows, func(_, r0, r1 int) {
		a := gemm.Matrix[float32]{Data: x[r0:], Stride: dim, ColMajor: true}
		gemm.Gemm(r1-r0, dim-r0, rows, a, x[r0:], dim, dst[r0*dim+r0:], dim, nil, 0)
	})
}

// parallelRows is the block of rows of a product that one call on one core computes.
const parallelRows = 64

// Apply returns x·M for the n rows of x (dim values each) and M dim × dim, in a new
// slice, blocks of rows on every core.
func Apply(x []float32, dim int, M []float32) ([]float32, error) {
	if dim <= 0 || len(M) != dim*dim || len(x)%dim != 0 {
		return nil, fmt.Errorf("prior: %d values and a %d-value map for %d features", len(x), len(M), dim)
	}
	n := len(x) / dim
	out := make([]float32, len(x))
	if n == 0 {
		return out, nil
	}
	parallel.For(runtime.GOMAXPROCS(0), n, parallelRows, func(_, r0, r1 int) {
		a := gemm.Matrix[float32]{Data: x[r0*dim:], Stride: dim}
		gemm.Gemm(r1-r0, dim, dim, a, M, dim, out[r0*dim:], dim, nil, 0)
	})
	return out, nil
}
