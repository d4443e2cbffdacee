package layers

import (
	"fmt"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// DenseGradient is Dense's per-example gradient kind, of a fully connected layer
// Z = A·W + b with W of shape [InDim, OutDim]: example i's gradient is outer(A_i, dZ_i)
// for W and dZ_i for b. No per-example gradient is ever formed: ‖outer(a, dz)‖ =
// ‖a‖·‖dz‖, and Σ_i c_i·outer(A_i, dZ_i) = Aᵀ·diag(c)·dZ is one GEMM, computed as its
// transpose dZᵀ·diag(c)·A ([OutDim × InDim]: a layer's few outputs are the GEMM's rows and
// its many inputs whole vectors of columns; each entry is the same sum of the same
// products either way). So the kind order of the weight is Wᵀ, row-major, then the bias;
// Scatter maps it to W's.
type DenseGradient[T num.Float] struct {
	// In is the layer input A, [B × InDim]; GradZ is ∂loss/∂Z, [B × OutDim].
	In, GradZ     []T
	InDim, OutDim int
	// Bias says whether the layer has a bias of OutDim entries after its weight.
	Bias bool
	// InOrder, when not nil, says that column j of In is multiplied by weight row
	// InOrder[j] (a permutation of 0…InDim−1): a network whose input arrives in another
	// order (NHWC flattened) permutes the weight rows instead of the input.
	InOrder []int

	inv []int // InOrder's inverse, kept by the native engine's taps (Scatter makes one otherwise)
}

var _ clipping.Gradient[float32] = (*DenseGradient[float32])(nil)

// denseGradShape is a DenseGradient before it is bound to buffers.
type denseGradShape struct {
	InDim, OutDim int
	Bias          bool
}

var _ clipping.Shape = denseGradShape{}

// NumParams is InDim·OutDim, plus OutDim with a bias.
func (s denseGradShape) NumParams() int {
	return (&DenseGradient[float32]{InDim: s.InDim, OutDim: s.OutDim, Bias: s.Bias}).NumParams()
}

// Bind32 is the DenseGradient of float32 buffers.
func (s denseGradShape) Bind32(in, gradZ []float32) clipping.Gradient[float32] {
	return &DenseGradient[float32]{In: in, GradZ: gradZ, InDim: s.InDim, OutDim: s.OutDim, Bias: s.Bias}
}

// Bind64 is the DenseGradient of float64 buffers.
func (s denseGradShape) Bind64(in, gradZ []float64) clipping.Gradient[float64] {
	return &DenseGradient[float64]{In: in, GradZ: gradZ, InDim: s.InDim, OutDim: s.OutDim, Bias: s.Bias}
}

// NumParams is InDim·OutDim, plus OutDim with a bias.
func (t *DenseGradient[T]) NumParams() int {
	n := t.InDim * t.OutDim
	if t.Bias {
		n += t.OutDim
	}
	return n
}

// Check checks In and GradZ hold batch rows and InOrder is a permutation.
func (t *DenseGradient[T]) Check(batch int) error {
	if t.InDim <= 0 || t.OutDim <= 0 {
		return fmt.Errorf("%w: dense gradient with InDim %d, OutDim %d", clipping.ErrShape, t.InDim, t.OutDim)
	}
	if err := checkLen("dense", "input", t.In, batch*t.InDim); err != nil {
		return err
	}
	if err := checkLen("dense", "gradient", t.GradZ, batch*t.OutDim); err != nil {
		return err
	}
	return checkOrder("dense", t.InOrder, t.InDim)
}

// RowScratch is 0: nothing is formed per example.
func (t *DenseGradient[T]) RowScratch() int { return 0 }

// NewScratch holds a chunk's packed rows when they are not consecutive.
func (t *DenseGradient[T]) NewScratch(chunk int) clipping.Scratch[T] {
	sc := &denseScratch[T]{t: t, packIn: make([]T, chunk*t.InDim), packGZ: make([]T, chunk*t.OutDim), ones: make([]T, chunk)}
	for j := range sc.ones {
		sc.ones[j] = 1
	}
	return sc
}

// Scatter maps the weight, Wᵀ in kind order, to W's rows, through InOrder.
func (t *DenseGradient[T]) Scatter(g []T, dst []float64, overwrite bool) {
	k, F := t.InDim, t.OutDim
	// Row by row of W (so each row of dst is written whole, in order), reading the row's
	// entries from g's F runs: with InOrder, row r is input j = inv[r], whose entries
	// lie at a stride of the channel count apart for successive rows (a flattened NHWC
	// image), which the prefetchers follow; writing dst at the permuted rows instead cost
	// a random cache line an entry.
	inv := t.inv
	if t.InOrder != nil && len(inv) != k {
		inv = inverse(t.InOrder)
	}
	for r := range k {
		j := r
		if inv != nil {
			j = inv[r]
		}
		row := dst[r*F : (r+1)*F]
		if overwrite {
			for o := range row {
				row[o] = float64(g[o*k+j])
			}
		} else {
			for o := range row {
				row[o] += float64(g[o*k+j])
			}
		}
	}
	clipping.Scatter(g[k*F:], dst[k*F:], overwrite)
}

type denseScratch[T num.Float] struct {
	t              *DenseGradient[T]
	packIn, packGZ []T // a chunk's rows of In and (scaled) GradZ
	ones           []T // for bias sums
}

func (s *denseScratch[T]) SquaredNorms(_ int, rows []int, sq []float64) {
	t := s.t
	k, F := t.InDim, t.OutDim
	for q, i := range rows {
		za := gemm.SumSquares(t.GradZ[i*F : (i+1)*F])
		v := gemm.SumSquares(t.In[i*k:(i+1)*k]) * za // ‖outer(a, dz)‖_F = ‖a‖·‖dz‖
		if t.Bias {
			v += za
		}
		sq[q] = v
	}
}

func (s *denseScratch[T]) ClippedSum(_ int, rows []int, coef, acc []T) {
	F := s.t.OutDim
	sc := s.packGZ[:len(rows)*F]
	for q, i := range rows {
		c := coef[q]
		for o, v := range s.t.GradZ[i*F : (i+1)*F] {
			sc[q*F+o] = c * v
		}
	}
	s.add(rows, sc, acc)
}

func (s *denseScratch[T]) Sum(_ int, rows []int, acc []T) {
	F := s.t.OutDim
	var gz []T
	if consecutive(rows) {
		gz = s.t.GradZ[rows[0]*F : (rows[len(rows)-1]+1)*F]
	} else {
		gz = s.packGZ[:len(rows)*F]
		for q, i := range rows {
			copy(gz[q*F:(q+1)*F], s.t.GradZ[i*F:(i+1)*F])
		}
	}
	s.add(rows, gz, acc)
}

// add adds Sᵀ·A (the weight, transposed) and Σ_q S_q (bias) to acc for the chunk's rows of
// A and the rows S that go with them.
func (s *denseScratch[T]) add(rows []int, gz, acc []T) {
	t := s.t
	k, F, n := t.InDim, t.OutDim, len(rows)
	var a []T
	if consecutive(rows) {
		a = t.In[rows[0]*k : (rows[n-1]+1)*k]
	} else {
		a = s.packIn[:n*k]
		for q, i := range rows {
			copy(a[q*k:(q+1)*k], t.In[i*k:(i+1)*k])
		}
	}
	gemm.Gemm(F, k, n, gemm.Matrix[T]{Data: gz, Stride: F, ColMajor: true}, a, k, acc[:k*F], k, nil, gemm.Accumulate)
	if t.Bias {
		gemm.Gemm(1, F, n, gemm.Matrix[T]{Data: s.ones[:n], Stride: n}, gz, F, acc[k*F:k*F+F], F, nil, gemm.Accumulate)
	}
}

func (s *denseScratch[T]) Example(_ int, i int, g []T) {
	t := s.t
	k, F := t.InDim, t.OutDim
	a, dz := t.In[i*k:(i+1)*k], t.GradZ[i*F:(i+1)*F]
	for o, zv := range dz {
		for r, av := range a {
			g[o*k+r] = av * zv
		}
	}
	if t.Bias {
		copy(g[k*F:], dz)
	}
}

// inverse is the inverse of permutation p: inverse(p)[p[j]] = j.
func inverse(p []int) []int {
	inv := make([]int, len(p))
	for j, r := range p {
		inv[r] = j
	}
	return inv
}

func consecutive(rows []int) bool { return rows[len(rows)-1]-rows[0] == len(rows)-1 }

// checkLen reports a buffer whose length is not want.
func checkLen[T num.Float](kind, what string, buf []T, want int) error {
	if len(buf) != want {
		return fmt.Errorf("%w: %s %s has %d values, want %d", clipping.ErrShape, kind, what, len(buf), want)
	}
	return nil
}

// checkOrder reports an InOrder that is not nil nor a permutation of 0…n−1.
func checkOrder(kind string, order []int, n int) error {
	if order == nil {
		return nil
	}
	if len(order) != n {
		return fmt.Errorf("%w: %s input order has %d entries for %d inputs", clipping.ErrShape, kind, len(order), n)
	}
	seen := make([]bool, n)
	for _, j := range order {
		if j < 0 || j >= n || seen[j] {
			return fmt.Errorf("%w: %s input order is not a permutation of 0…%d", clipping.ErrShape, kind, n-1)
		}
		seen[j] = true
	}
	return nil
}
