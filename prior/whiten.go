package prior

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/parallel"
)

// MaxDim bounds the dimension of a whitening map: its eigen-decomposition costs O(d³)
// (about 5 minutes for d = 3,969 on two cores) and the map 4·d² bytes (63 MB).
const MaxDim = 4096

// MinFloor is the smallest floor Whitening takes: below it the map's scale would leave
// float64's range for directions without variance (a GroupNorm's), and float32's
// covariance could not tell such small eigenvalues apart anyway.
const MinFloor = 1e-12

// Rows supplies the rows of the prior's feature matrix: it writes rows [lo, hi), dim
// values each, one after the other into dst.
type Rows func(lo, hi int, dst []float32) error

// Progress, when not nil, is told how far a long computation has come: stage names it
// ("covariance": the prior's images rendered, featurised and added up; then
// "eigen-decomposition"), done of total units are finished (total 0: no count).
type Progress func(stage string, done, total int)

// whitenChunk is the number of rows of one covariance update.
const whitenChunk = 512

// Whitening returns the dim × dim map M (row-major, symmetric; a feature row x becomes
// x·M) that whitens the n rows of rows, the prior's features (ZCA whitening):
//
//	M = s · (C + floor·λ₁·I)^(−1/2) = s · V · diag(λ + floor·λ₁)^(−1/2) · Vᵀ
//
// for the rows' covariance C (centred, divided by n) and its eigen-decomposition
// V·diag(λ)·Vᵀ (λ₁ the largest eigenvalue, negative round-off taken as 0). Being a
// function of C, not of the basis the decomposition picks, M changes by rounding only
// where the eigenvectors of (nearly) equal eigenvalues could come out rotated or flipped
// (another CPU, another BLAS). floor ∈ [MinFloor, 1] smooths the directions of least
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
// chunks of rows, and during the eigen-decomposition (which goes on in the background
// until it ends, its result unused). It reports progress before the first chunk too, so
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
		for i, v := range prod {
			S[i] += float64(v)
		}
		progress("covariance", hi, n)
	}
	mean := make([]float64, dim) // about shift
	for j := range mean {
		mean[j] = sum[j] / float64(n)
	}
	cov := mat.NewSymDense(dim, nil)
	trace := 0.0
	for i := range dim {
		for j := i; j < dim; j++ {
			cov.SetSym(i, j, S[i*dim+j]/float64(n)-mean[i]*mean[j])
		}
		trace += cov.At(i, i)
	}
	progress("eigen-decomposition", 0, 0)
	var eig mat.EigenSym
	factorized := make(chan bool, 1)
	go func() { factorized <- eig.Factorize(cov, true) }()
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
		return nil, fmt.Errorf("prior: the prior's features have no variance (largest eigenvalue %v)", top)
	}
	mu := make([]float64, dim) // the rows' mean
	meanSq := trace
	for j := range mu {
		mu[j] = shift[j] + mean[j]
		meanSq += mu[j] * mu[j]
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
		return nil, fmt.Errorf("prior: whitening scale %v (floor %v too small for eigenvalues up to %v)", s, floor, top)
	}
	a := mat.NewDense(dim, dim, nil)
	for i := range dim {
		for j := range dim {
			a.Set(i, j, s*vecs.At(i, j)*w[j])
		}
	}
	var m mat.Dense
	m.Mul(a, vecs.T())
	M := make([]float32, dim*dim)
	for i := range dim {
		for j := range dim {
			v := float32(m.At(i, j))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("prior: whitening map entry (%d, %d) is %v (floor %v too small)", i, j, v, floor)
			}
			M[i*dim+j] = v
		}
	}
	return M, nil
}

// gramParallel writes xᵀx (dim × dim, row-major) for the rows × dim matrix x into dst,
// blocks of its rows on every core (a row's values do not depend on the blocks).
func gramParallel(dim, rows int, x, dst []float32) {
	parallel.For(runtime.GOMAXPROCS(0), dim, parallelRows, func(_, r0, r1 int) {
		a := gemm.Matrix[float32]{Data: x[r0:], Stride: dim, ColMajor: true}
		gemm.Gemm(r1-r0, dim, rows, a, x, dim, dst[r0*dim:], dim, nil, 0)
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
