package clipping

import (
	"fmt"

	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// SetGroupSize makes every example a group of k consecutive rows of the batch: rows
// i·k … i·k+k−1 belong to example i, whose gradient is the mean (1/k)·Σ_rows g_row of its
// rows' gradients (augmentation multiplicity: k augmented views of one example). Norms,
// clip factors and Stats then refer to examples (batch/k of them), not rows, so the
// sensitivity of a clipped sum is still the rule's Bound per example. k = 1 (the default)
// is one row per example.
//
// The batch must be a multiple of k. A mask still has one entry per row; every row of a
// group must be real, or every row padding (ErrShape otherwise). A new size sets the chunk
// size back to its default for that size, in examples (SetChunkRows counts examples too);
// the current size leaves everything as it is.
//
// The grouping is generic: for k > 1 each layer's gradient is wrapped so that a group's
// mean gradient is formed in per-worker scratch from the kind's own plain Sum over the
// group's rows (for Dense one GEMM Aᵀ_group·dZ_group; the norm shortcut ‖a‖·‖dz‖ holds
// only for one row), its norm taken, and the chunk's clipped sum added with one GEMM, as
// Formed does for one row.
func (w *Workspace[T]) SetGroupSize(k int) error {
	if k < 1 || w.batch%k != 0 {
		return fmt.Errorf("%w: group size %d does not divide the batch of %d rows", ErrShape, k, w.batch)
	}
	if k == w.GroupSize() {
		return nil // nothing changes (in particular the chunk size stays)
	}
	if w.base == nil {
		w.base = w.grads
	}
	w.k = k
	n := w.batch / k
	w.grads = make([]Gradient[T], len(w.base))
	rowScratch := 0
	for l, g := range w.base {
		if k == 1 {
			w.grads[l] = g
		} else {
			w.grads[l] = grouped[T]{g: g, k: k}
		}
		rowScratch += w.grads[l].RowScratch()
		w.sq[l] = make([]float64, n)
		w.layerNorms[l] = make([]float64, n)
		w.factor[l] = make([]float64, n)
	}
	w.norms = make([]float64, n)
	w.rows = make([]int, 0, n)
	w.chunk = max(1, min(n, 256<<10/max(1, rowScratch*num.SizeOf[T]())))
	w.mu.Lock()
	w.scratch = nil // the kinds' scratch changed
	w.mu.Unlock()
	return nil
}

// GroupSize is the number of consecutive rows per example (SetGroupSize).
func (w *Workspace[T]) GroupSize() int { return max(w.k, 1) }

// examples lists the real examples of mask into w.rows: the rows themselves for groups of
// one, else the groups whose rows are all real. A group mixing real and padding rows is
// an error.
func (w *Workspace[T]) examples(mask []bool) error {
	k := max(w.k, 1)
	w.rows = w.rows[:0]
	for i := range w.batch / k {
		if mask == nil {
			w.rows = append(w.rows, i)
			continue
		}
		real := mask[i*k]
		for r := i*k + 1; r < (i+1)*k; r++ {
			if mask[r] != real {
				return fmt.Errorf("%w: example %d (rows %d…%d) mixes real and padding rows", ErrShape, i, i*k, (i+1)*k-1)
			}
		}
		if real {
			w.rows = append(w.rows, i)
		}
	}
	return nil
}

// grouped is the Gradient of k consecutive rows per example: example i's gradient is the
// mean of rows i·k … i·k+k−1's gradients under g.
type grouped[T num.Float] struct {
	g Gradient[T]
	k int
}

func (s grouped[T]) NumParams() int { return s.g.NumParams() }

func (s grouped[T]) Check(batch int) error { return s.g.Check(batch * s.k) }

// RowScratch is the kind's own plus the formed mean gradient.
func (s grouped[T]) RowScratch() int { return s.g.RowScratch() + s.g.NumParams() }

func (s grouped[T]) Scatter(g []T, dst []float64, overwrite bool) { s.g.Scatter(g, dst, overwrite) }

func (s grouped[T]) NewScratch(chunk int) Scratch[T] {
	np := s.g.NumParams()
	return &groupScratch[T]{in: s.g.NewScratch(s.k), k: s.k, np: np,
		grads: make([]T, max(chunk, 1)*np), rows: make([]int, s.k)}
}

type groupScratch[T num.Float] struct {
	in    Scratch[T] // the kind's scratch, for chunks of one group's rows
	k, np int
	grads []T   // [chunk × np]: the last SquaredNorms' mean gradients
	rows  []int // one group's rows
}

// form writes group i's mean gradient into g: the kind's plain sum over the group's rows,
// divided by k (one rounding per value).
func (s *groupScratch[T]) form(worker, i int, g []T) {
	clear(g)
	for r := range s.rows {
		s.rows[r] = i*s.k + r
	}
	s.in.Sum(worker, s.rows, g)
	k := T(s.k)
	for j := range g {
		g[j] /= k
	}
}

func (s *groupScratch[T]) SquaredNorms(worker int, groups []int, sq []float64) {
	for q, i := range groups {
		g := s.grads[q*s.np : (q+1)*s.np]
		s.form(worker, i, g)
		sq[q] = gemm.SumSquares(g)
	}
}

// ClippedSum is acc += coefᵀ·G over the means formed by SquaredNorms, one GEMM.
func (s *groupScratch[T]) ClippedSum(_ int, groups []int, coef, acc []T) {
	n := len(groups)
	gemm.Gemm(1, s.np, n, gemm.Matrix[T]{Data: coef[:n], Stride: 1, ColMajor: true}, s.grads, s.np,
		acc[:s.np], s.np, nil, gemm.Accumulate)
}

func (s *groupScratch[T]) Sum(worker int, groups []int, acc []T) {
	g := s.grads[:s.np]
	for _, i := range groups {
		s.form(worker, i, g)
		for j, v := range g {
			acc[j] += v
		}
	}
}

func (s *groupScratch[T]) Example(worker, i int, g []T) { s.form(worker, i, g) }
