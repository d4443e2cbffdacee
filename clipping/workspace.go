package clipping

import (
	"fmt"
	"math"
)

// Workspace turns the taps of one network at one physical batch size into per-example
// norms and (clipped) gradient sums. It allocates every buffer once, in NewWorkspace, and
// reuses them on every call, so a training step allocates nothing here.
//
// How each layer is handled (all exact, no approximation):
//   - Dense: the norm of outer(A_i, dZ_i) is ‖A_i‖·‖dZ_i‖ (no per-example gradient is
//     formed), and Σ_i c_i·outer(A_i, dZ_i) = Aᵀ·diag(c)·dZ is one GEMM.
//   - Conv: example i's gradient dZ_i·U_i is formed once into a reused [B × NumParams]
//     buffer (one small GEMM per example), its norm taken from the row, and the clipped sum
//     is the weighted row sum Σ_i c_i·G_i (a gemv).
//
// Rows outside the mask are never read: they contribute exactly zero whatever the taps
// hold there.
//
// A Workspace is not safe for concurrent use.
type Workspace[T Float] struct {
	taps    []Tap[T]
	batch   int
	offsets []int // first flat index of each tap's parameters
	d       int

	rows       []int       // real rows of the current call
	sq         [][]float64 // [layer][example] squared norm of the example's gradient in that layer
	layerNorms [][]float64 // [layer][example] sqrt(sq)
	norms      []float64   // [example] total norm before clipping
	factor     [][]float64 // [layer][example] clip factor
	sqEx, fEx  []float64   // one example's per-layer squared norms and factors

	perExample [][]T // conv layers: [B × NumParams] per-example gradients; nil for dense layers
	packIn     []T   // dense layers: real rows of In when some rows are masked
	packGZ     []T   // dense layers: real rows of GradZ, scaled by their clip factors
	weight     []T   // one layer's summed weight gradient
}

// Stats describes the examples of one ClippedSum call.
type Stats struct {
	// Norms holds each example's gradient norm before clipping, 0 for padding rows. It
	// aliases the Workspace and is overwritten by its next call.
	Norms []float64
	// LayerNorms[l][i] is the norm of example i's gradient restricted to parametrised layer
	// l (same aliasing as Norms).
	LayerNorms [][]float64
	// Clipped counts the real examples that were scaled down in at least one layer.
	Clipped int
}

// NewWorkspace prepares buffers for taps of a batch of the given size. The taps' In and
// GradZ arrays are kept (not copied): the caller refreshes their contents in place before
// each call. The flat parameter order is the order of taps, each tap's weight then bias.
func NewWorkspace[T Float](taps []Tap[T], batch int) (*Workspace[T], error) {
	if batch <= 0 {
		return nil, fmt.Errorf("%w: batch size %d", ErrShape, batch)
	}
	if len(taps) == 0 {
		return nil, fmt.Errorf("%w: no taps", ErrShape)
	}
	w := &Workspace[T]{
		taps:       append([]Tap[T](nil), taps...),
		batch:      batch,
		offsets:    make([]int, len(taps)),
		rows:       make([]int, 0, batch),
		sq:         make([][]float64, len(taps)),
		layerNorms: make([][]float64, len(taps)),
		factor:     make([][]float64, len(taps)),
		norms:      make([]float64, batch),
		sqEx:       make([]float64, len(taps)),
		fEx:        make([]float64, len(taps)),
		perExample: make([][]T, len(taps)),
	}
	var maxIn, maxGZ, maxWeight int
	for l, t := range taps {
		if err := t.check(batch); err != nil {
			return nil, fmt.Errorf("tap %d: %w", l, err)
		}
		w.offsets[l] = w.d
		w.d += t.NumParams()
		w.sq[l] = make([]float64, batch)
		w.layerNorms[l] = make([]float64, batch)
		w.factor[l] = make([]float64, batch)
		maxWeight = max(maxWeight, t.InDim*t.OutDim)
		switch t.Kind {
		case Dense:
			maxIn = max(maxIn, batch*t.InDim)
			maxGZ = max(maxGZ, batch*t.OutDim)
		case Conv:
			w.perExample[l] = make([]T, batch*t.NumParams())
		}
	}
	w.packIn = make([]T, maxIn)
	w.packGZ = make([]T, maxGZ)
	w.weight = make([]T, maxWeight)
	return w, nil
}

// NumParams is the length of the flat gradient: Σ over taps of Tap.NumParams.
func (w *Workspace[T]) NumParams() int { return w.d }

// Batch is the physical batch size.
func (w *Workspace[T]) Batch() int { return w.batch }

// ClippedSum adds Σ_i c_i·g_i over the real rows i of mask (nil: every row) to dst, where
// g_i is example i's gradient and c_i its clip factor under rule (per layer for PerLayer).
// Adding, not overwriting, lets several physical chunks of one logical batch share dst.
//
// It returns the per-example norms. On error dst is untouched: a non-finite norm of a
// real example is ErrNonFinite.
func (w *Workspace[T]) ClippedSum(mask []bool, rule Rule, dst []float64) (Stats, error) {
	if rule == nil {
		return Stats{}, fmt.Errorf("%w: nil rule", ErrRule)
	}
	if err := rule.check(len(w.taps)); err != nil {
		return Stats{}, err
	}
	if err := w.prepare(mask, dst); err != nil {
		return Stats{}, err
	}
	if err := w.computeNorms(); err != nil {
		return Stats{}, err
	}
	clipped := 0
	for _, i := range w.rows {
		for l := range w.taps {
			w.sqEx[l] = w.sq[l][i]
		}
		rule.factors(w.sqEx, w.fEx)
		scaled := false
		for l, f := range w.fEx {
			w.factor[l][i] = f
			scaled = scaled || f < 1
		}
		if scaled {
			clipped++
		}
	}
	for l, t := range w.taps {
		switch t.Kind {
		case Dense:
			w.denseSum(l, w.factor[l], dst)
		case Conv:
			w.convWeightedSum(l, w.factor[l], dst)
		}
	}
	return Stats{Norms: w.norms, LayerNorms: w.layerNorms, Clipped: clipped}, nil
}

// Sum adds the plain gradient Σ_i g_i over the real rows of mask (nil: every row) to dst,
// for non-private baselines. It forms no per-example gradient.
func (w *Workspace[T]) Sum(mask []bool, dst []float64) error {
	if err := w.prepare(mask, dst); err != nil {
		return err
	}
	for l, t := range w.taps {
		switch t.Kind {
		case Dense:
			w.denseSum(l, nil, dst)
		case Conv:
			w.convSum(l, dst)
		}
	}
	return nil
}

// PerExample overwrites dst with example i's full gradient, as the taps hold it now. It is
// for diagnostics and tests; the training path never forms it.
func (w *Workspace[T]) PerExample(i int, dst []float64) error {
	if i < 0 || i >= w.batch {
		return fmt.Errorf("%w: example %d outside batch of %d", ErrShape, i, w.batch)
	}
	if len(dst) != w.d {
		return fmt.Errorf("%w: gradient buffer has %d entries, want %d", ErrShape, len(dst), w.d)
	}
	for l, t := range w.taps {
		g := dst[w.offsets[l] : w.offsets[l]+t.NumParams()]
		F, k, P := t.OutDim, t.InDim, t.positions()
		dz := t.GradZ[i*F*P : (i+1)*F*P]
		switch t.Kind {
		case Dense:
			a := t.In[i*k : (i+1)*k]
			for r, av := range a {
				for o, zv := range dz {
					g[r*F+o] = float64(av) * float64(zv)
				}
			}
			if t.Bias {
				for o, zv := range dz {
					g[k*F+o] = float64(zv)
				}
			}
		case Conv:
			wgt := w.weight[:F*k]
			gemm(false, false, F, k, P, 1, dz, P, t.In[i*P*k:(i+1)*P*k], k, 0, wgt, k)
			for j, v := range wgt {
				g[j] = float64(v)
			}
			if t.Bias {
				for f := range F {
					g[F*k+f] = rowSum(dz[f*P : (f+1)*P])
				}
			}
		}
	}
	return nil
}

// prepare validates a call and records its real rows.
func (w *Workspace[T]) prepare(mask []bool, dst []float64) error {
	if len(dst) != w.d {
		return fmt.Errorf("%w: gradient buffer has %d entries, want %d", ErrShape, len(dst), w.d)
	}
	if mask != nil && len(mask) != w.batch {
		return fmt.Errorf("%w: mask has %d rows, batch has %d", ErrShape, len(mask), w.batch)
	}
	w.rows = w.rows[:0]
	for i := range w.batch {
		if mask == nil || mask[i] {
			w.rows = append(w.rows, i)
		}
	}
	return nil
}

// computeNorms fills sq, layerNorms and norms for the real rows (zero elsewhere) and forms
// the conv layers' per-example gradients.
func (w *Workspace[T]) computeNorms() error {
	for l := range w.taps {
		clear(w.sq[l])
		clear(w.layerNorms[l])
		clear(w.factor[l])
	}
	clear(w.norms)
	for l, t := range w.taps {
		switch t.Kind {
		case Dense:
			w.denseNorms(l)
		case Conv:
			w.convPerExample(l)
		}
	}
	for _, i := range w.rows {
		var s float64
		for l := range w.taps {
			s += w.sq[l][i]
			w.layerNorms[l][i] = math.Sqrt(w.sq[l][i])
		}
		w.norms[i] = math.Sqrt(s)
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return fmt.Errorf("%w: example %d has gradient norm %v", ErrNonFinite, i, w.norms[i])
		}
	}
	return nil
}

// denseNorms uses ‖outer(a, dz)‖_F = ‖a‖·‖dz‖.
func (w *Workspace[T]) denseNorms(l int) {
	t := w.taps[l]
	k, F := t.InDim, t.OutDim
	for _, i := range w.rows {
		za := sumSquares(t.GradZ[i*F : (i+1)*F])
		s := sumSquares(t.In[i*k:(i+1)*k]) * za
		if t.Bias {
			s += za
		}
		w.sq[l][i] = s
	}
}

// convPerExample forms G_i = [dZ_i·U_i, Σ_p dZ_i] for every real row and its squared norm.
func (w *Workspace[T]) convPerExample(l int) {
	t := w.taps[l]
	F, k, P, np := t.OutDim, t.InDim, t.Positions, t.NumParams()
	buf := w.perExample[l]
	for _, i := range w.rows {
		g := buf[i*np : (i+1)*np]
		dz := t.GradZ[i*F*P : (i+1)*F*P]
		gemm(false, false, F, k, P, 1, dz, P, t.In[i*P*k:(i+1)*P*k], k, 0, g[:F*k], k)
		if t.Bias {
			for f := range F {
				g[F*k+f] = T(rowSum(dz[f*P : (f+1)*P]))
			}
		}
		w.sq[l][i] = sumSquares(g)
	}
}

// denseSum adds Aᵀ·diag(c)·dZ (weight) and Σ_i c_i dZ_i (bias) over the real rows; c nil
// means every factor is 1.
func (w *Workspace[T]) denseSum(l int, c []float64, dst []float64) {
	t := w.taps[l]
	k, F := t.InDim, t.OutDim
	n := len(w.rows)
	if n == 0 {
		return
	}
	a, s := t.In, t.GradZ
	if n < w.batch {
		a = w.packIn[:n*k]
		for r, i := range w.rows {
			copy(a[r*k:(r+1)*k], t.In[i*k:(i+1)*k])
		}
	}
	if c != nil || n < w.batch {
		s = w.packGZ[:n*F]
		for r, i := range w.rows {
			dz, row := t.GradZ[i*F:(i+1)*F], s[r*F:(r+1)*F]
			if c == nil {
				copy(row, dz)
				continue
			}
			ci := T(c[i])
			for o, v := range dz {
				row[o] = ci * v
			}
		}
	}
	wgt := w.weight[:k*F]
	gemm(true, false, k, F, n, 1, a, k, s, F, 0, wgt, F)
	off := w.offsets[l]
	addInto(dst[off:off+k*F], wgt)
	if t.Bias {
		b := dst[off+k*F : off+k*F+F]
		for r := range n {
			for o, v := range s[r*F : (r+1)*F] {
				b[o] += float64(v)
			}
		}
	}
}

// convWeightedSum adds Σ_i c_i·G_i over the real rows, a gemv on the per-example buffer,
// walked in column blocks so that the slice of dst being summed into stays in cache.
func (w *Workspace[T]) convWeightedSum(l int, c []float64, dst []float64) {
	const block = 2048
	t := w.taps[l]
	np := t.NumParams()
	buf := w.perExample[l]
	out := dst[w.offsets[l] : w.offsets[l]+np]
	for j0 := 0; j0 < np; j0 += block {
		j1 := min(j0+block, np)
		d := out[j0:j1]
		for _, i := range w.rows {
			ci := c[i]
			for j, v := range buf[i*np+j0 : i*np+j1] {
				d[j] += ci * float64(v)
			}
		}
	}
}

// convSum adds Σ_i dZ_i·U_i (one accumulating GEMM per example) and Σ_i Σ_p dZ_i.
func (w *Workspace[T]) convSum(l int, dst []float64) {
	t := w.taps[l]
	F, k, P := t.OutDim, t.InDim, t.Positions
	if len(w.rows) == 0 {
		return
	}
	wgt := w.weight[:F*k]
	clear(wgt)
	off := w.offsets[l]
	for _, i := range w.rows {
		dz := t.GradZ[i*F*P : (i+1)*F*P]
		gemm(false, false, F, k, P, 1, dz, P, t.In[i*P*k:(i+1)*P*k], k, 1, wgt, k)
		if t.Bias {
			b := dst[off+F*k : off+F*k+F]
			for f := range F {
				b[f] += rowSum(dz[f*P : (f+1)*P])
			}
		}
	}
	addInto(dst[off:off+F*k], wgt)
}

func rowSum[T Float](x []T) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

func addInto[T Float](dst []float64, src []T) {
	for j, v := range src {
		dst[j] += float64(v)
	}
}
