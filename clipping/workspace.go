package clipping

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/parallel"
)

// Workspace turns the taps of one network at one physical batch size into per-example
// norms and (clipped) gradient sums. It allocates its buffers once and reuses them on
// every call, so a training step allocates nothing here.
//
// How each layer is handled (all exact, no approximation):
//   - Dense: the norm of outer(A_i, dZ_i) is ‖A_i‖·‖dZ_i‖ (no per-example gradient is
//     formed), and Σ_i c_i·outer(A_i, dZ_i) = Aᵀ·diag(c)·dZ is one GEMM.
//   - Conv: example i's gradient dZ_i·U_i is formed (one small GEMM) into a buffer that
//     holds one chunk of examples, its norm taken, and the chunk's clipped sum Σ c_i·G_i is
//     one more GEMM. No [B × NumParams] matrix is ever held.
//
// The real rows are cut into chunks of ChunkRows, and the chunks into at most 16 groups of
// consecutive chunks (fewer for models too large for 16 partial sums in 32 MiB); the groups run on up to GOMAXPROCS goroutines, each summing into its
// own partial sum, and the partial sums are added in group order. The partition depends only
// on the number of real rows, so results are bit-for-bit reproducible whatever the number
// of cores or the scheduling, and a batch with padding rows gives exactly the result of the
// same real rows without them.
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
	chunk   int // real rows per chunk

	rows       []int       // real rows of the current call
	sq         [][]float64 // [layer][example] squared norm of the example's gradient in that layer
	layerNorms [][]float64 // [layer][example] sqrt(sq)
	norms      []float64   // [example] total norm before clipping
	factor     [][]float64 // [layer][example] clip factor

	partial [][]T // [group] partial sums, each tap's weight in tap order (see InOrder)
	groups  int   // most groups (partial sums) a call uses
	errs    []error

	mu      sync.Mutex
	scratch []*scratch[T] // per worker
}

// maxGroups bounds the partial sums (and the parallelism): at most 16 of them, and no more
// than fit in 32 MiB (but at least 2) for large models.
const (
	maxGroups    = 16
	partialBytes = 32 << 20
)

// scratch is one worker's buffers for one chunk.
type scratch[T Float] struct {
	grads     [][]T // conv taps: [chunk × NumParams] per-example gradients; nil for dense
	packIn    []T   // dense: the chunk's real rows of In, when they are not consecutive
	packGZ    []T   // dense: the chunk's real rows of GradZ, scaled by their factors
	coef      []T   // the chunk's factors for one layer
	ones      []T   // all ones, for bias sums
	patches   []T   // one example's im2col'd input, for taps with Patches
	worker    int   // whose scratch this is: the Filler's worker, or −1 without a Filler
	sqEx, fEx []float64
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

// Filler refreshes the taps' rows lo…hi−1 in place (a network's forward and backward pass
// over those rows). Workspace calls it concurrently for disjoint ranges, and never twice
// at once with the same worker, so worker can index the caller's per-worker scratch.
type Filler func(worker, lo, hi int) error

// NewWorkspace prepares buffers for taps of a batch of the given size. The taps' In and
// GradZ arrays are kept (not copied): the caller refreshes their contents in place before
// each call (or from a Filler). The flat parameter order is the order of taps, each tap's
// weight then bias.
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
		errs:       make([]error, maxGroups),
	}
	convParams := 0
	for l, t := range taps {
		if err := t.check(batch); err != nil {
			return nil, fmt.Errorf("tap %d: %w", l, err)
		}
		w.offsets[l] = w.d
		w.d += t.NumParams()
		w.sq[l] = make([]float64, batch)
		w.layerNorms[l] = make([]float64, batch)
		w.factor[l] = make([]float64, batch)
		if t.Kind == Conv {
			convParams += t.NumParams()
		}
	}
	// Default chunk: the per-example gradients of a chunk fill about 256 KiB.
	w.chunk = max(1, min(batch, 256<<10/max(1, convParams*sizeOf[T]())))
	w.groups = max(2, min(maxGroups, partialBytes/(w.d*sizeOf[T]())))
	return w, nil
}

func sizeOf[T Float]() int {
	var z T
	if _, ok := any(z).(float32); ok {
		return 4
	}
	return 8
}

// NumParams is the length of the flat gradient: Σ over taps of Tap.NumParams.
func (w *Workspace[T]) NumParams() int { return w.d }

// Batch is the physical batch size.
func (w *Workspace[T]) Batch() int { return w.batch }

// ChunkRows is the number of real rows clipped (and handed to a Filler) together.
func (w *Workspace[T]) ChunkRows() int { return w.chunk }

// SetChunkRows sets the number of real rows clipped together (at least 1). A network sets
// it so that a chunk's activations stay in cache between its Filler call and clipping.
// It changes how sums are grouped, so results are reproducible for a fixed setting.
func (w *Workspace[T]) SetChunkRows(n int) { w.chunk = max(1, min(n, w.batch)) }

// ClippedSum adds Σ_i c_i·g_i over the real rows i of mask (nil: every row) to dst, where
// g_i is example i's gradient and c_i its clip factor under rule (per layer for PerLayer).
// Adding, not overwriting, lets several physical chunks of one logical batch share dst.
//
// It returns the per-example norms. On error dst is untouched: a non-finite norm of a
// real example is ErrNonFinite.
func (w *Workspace[T]) ClippedSum(mask []bool, rule Rule, dst []float64) (Stats, error) {
	return w.ClippedSumFill(mask, rule, dst, nil)
}

// ClippedSumFill is ClippedSum for taps that fill calls refresh chunk by chunk just before
// they are clipped, so that a network's activations are still in cache. The calls cover
// every row of the batch once (padding rows among them) unless there is no real row; a
// fill error stops the work and is returned, with dst untouched.
func (w *Workspace[T]) ClippedSumFill(mask []bool, rule Rule, dst []float64, fill Filler) (Stats, error) {
	if rule == nil {
		return Stats{}, fmt.Errorf("%w: nil rule", ErrRule)
	}
	if err := rule.check(len(w.taps)); err != nil {
		return Stats{}, err
	}
	if err := w.run(mask, rule, dst, fill); err != nil {
		return Stats{}, err
	}
	clipped := 0
	for _, i := range w.rows {
		for l := range w.taps {
			if w.factor[l][i] < 1 {
				clipped++
				break
			}
		}
	}
	return Stats{Norms: w.norms, LayerNorms: w.layerNorms, Clipped: clipped}, nil
}

// Sum adds the plain gradient Σ_i g_i over the real rows of mask (nil: every row) to dst,
// for non-private baselines. It forms no per-example gradient.
func (w *Workspace[T]) Sum(mask []bool, dst []float64) error {
	return w.run(mask, nil, dst, nil)
}

// SumFill is Sum with taps refreshed by fill, as in ClippedSumFill.
func (w *Workspace[T]) SumFill(mask []bool, dst []float64, fill Filler) error {
	return w.run(mask, nil, dst, fill)
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
		g := make([]T, t.NumParams())
		switch t.Kind {
		case Dense:
			k, F := t.InDim, t.OutDim
			a, dz := t.In[i*k:(i+1)*k], t.GradZ[i*F:(i+1)*F]
			for r, av := range a {
				for o, zv := range dz {
					g[r*F+o] = av * zv
				}
			}
			if t.Bias {
				copy(g[k*F:], dz)
			}
		case Conv:
			ones := make([]T, t.Positions)
			for p := range ones {
				ones[p] = 1
			}
			w.convGradient(t, -1, i, g, ones, make([]T, t.Positions*t.InDim))
		}
		w.addTap(l, g, dst, true)
	}
	return nil
}

// run is ClippedSumFill (rule != nil) and SumFill (rule == nil) up to the statistics.
func (w *Workspace[T]) run(mask []bool, rule Rule, dst []float64, fill Filler) error {
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
	for l := range w.taps {
		clear(w.sq[l])
		clear(w.layerNorms[l])
		clear(w.factor[l])
	}
	clear(w.norms)
	n := len(w.rows)
	if n == 0 {
		return nil
	}
	chunks := (n + w.chunk - 1) / w.chunk
	groups := min(w.groups, chunks)
	for len(w.partial) < groups {
		w.partial = append(w.partial, make([]T, w.d))
	}
	workers := runtime.GOMAXPROCS(0)
	parallel.For(workers, groups, 1, func(worker, g, _ int) {
		sc := w.scratchFor(worker)
		sc.worker = -1
		if fill != nil {
			sc.worker = worker
		}
		acc := w.partial[g]
		clear(acc)
		w.errs[g] = nil
		for c := g * chunks / groups; c < (g+1)*chunks/groups; c++ {
			rows := w.rows[c*w.chunk : min((c+1)*w.chunk, n)]
			if fill != nil {
				// Physical rows from after the previous chunk's last real row up to this
				// chunk's last (the whole batch's end for the last chunk): disjoint ranges
				// that cover the batch.
				lo, hi := 0, rows[len(rows)-1]+1
				if c > 0 {
					lo = w.rows[c*w.chunk-1] + 1
				}
				if c == chunks-1 {
					hi = w.batch
				}
				if err := fill(worker, lo, hi); err != nil {
					w.errs[g] = err
					return
				}
			}
			if rule != nil {
				w.clipChunk(sc, rows, rule, acc)
			} else {
				w.sumChunk(sc, rows, acc)
			}
		}
	})
	for _, err := range w.errs[:groups] {
		if err != nil {
			return err
		}
	}
	if rule != nil {
		for _, i := range w.rows {
			if s := w.norms[i]; math.IsNaN(s) || math.IsInf(s, 0) {
				return fmt.Errorf("%w: example %d has gradient norm %v", ErrNonFinite, i, s)
			}
		}
	}
	w.reduce(groups, dst)
	return nil
}

func (w *Workspace[T]) scratchFor(worker int) *scratch[T] {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.scratch) <= worker {
		w.scratch = append(w.scratch, nil)
	}
	if sc := w.scratch[worker]; sc != nil && len(sc.coef) == w.chunk {
		return sc
	}
	sc := &scratch[T]{
		grads: make([][]T, len(w.taps)),
		coef:  make([]T, w.chunk),
		sqEx:  make([]float64, len(w.taps)),
		fEx:   make([]float64, len(w.taps)),
	}
	var maxIn, maxGZ, maxOnes, maxPatches int
	for l, t := range w.taps {
		switch t.Kind {
		case Conv:
			sc.grads[l] = make([]T, w.chunk*t.NumParams())
			maxOnes = max(maxOnes, t.Positions)
			if t.Patches != nil {
				maxPatches = max(maxPatches, t.Positions*t.InDim)
			}
		case Dense:
			maxIn = max(maxIn, w.chunk*t.InDim)
			maxGZ = max(maxGZ, w.chunk*t.OutDim)
		}
	}
	sc.packIn, sc.packGZ = make([]T, maxIn), make([]T, maxGZ)
	sc.patches = make([]T, maxPatches)
	sc.ones = make([]T, max(maxOnes, w.chunk))
	for j := range sc.ones {
		sc.ones[j] = 1
	}
	w.scratch[worker] = sc
	return sc
}

// patchesOf is example i's im2col'd input for conv tap t: a slice of In, or from Patches
// (worker's cache, or built into buf).
func patchesOf[T Float](t Tap[T], worker, i int, buf []T) []T {
	n := t.Positions * t.InDim
	if t.Patches != nil {
		u := t.Patches(worker, i, buf[:n])
		if len(u) != n {
			panic(fmt.Sprintf("clipping: Patches returned %d values, want %d", len(u), n))
		}
		return u
	}
	return t.In[i*n : (i+1)*n]
}

// convGradient writes example i's gradient for conv tap t into g (weight [OutDim × InDim]
// in tap order, then the bias); ones holds Positions ones, buf room for Patches.
func (w *Workspace[T]) convGradient(t Tap[T], worker, i int, g, ones, buf []T) {
	F, k, P := t.OutDim, t.InDim, t.Positions
	dz, u := t.GradZ[i*F*P:(i+1)*F*P], patchesOf(t, worker, i, buf)
	// Weight: dZ_i [F × P] · U_i [P × k], dZ_i stored [P × F] when PositionsMajor.
	a := gemm.Matrix[T]{Data: dz, Stride: P}
	if t.PositionsMajor {
		a = gemm.Matrix[T]{Data: dz, Stride: F, ColMajor: true}
	}
	gemm.Gemm(F, k, P, a, u, k, g, k, nil, 0)
	if !t.Bias {
		return
	}
	b := g[F*k : F*k+F]
	if t.PositionsMajor {
		gemm.Gemm(1, F, P, gemm.Matrix[T]{Data: ones[:P], Stride: P}, dz, F, b, F, nil, 0)
	} else {
		gemm.Gemm(F, 1, P, gemm.Matrix[T]{Data: dz, Stride: P}, ones[:P], 1, b, 1, nil, 0)
	}
}

// clipChunk forms the norms of the chunk's real rows, their clip factors, and adds the
// chunk's clipped sum to acc.
func (w *Workspace[T]) clipChunk(sc *scratch[T], rows []int, rule Rule, acc []T) {
	for l, t := range w.taps {
		switch t.Kind {
		case Conv:
			np := t.NumParams()
			for q, i := range rows {
				g := sc.grads[l][q*np : (q+1)*np]
				w.convGradient(t, sc.worker, i, g, sc.ones, sc.patches)
				w.sq[l][i] = gemm.SumSquares(g)
			}
		case Dense:
			k, F := t.InDim, t.OutDim
			for _, i := range rows {
				za := gemm.SumSquares(t.GradZ[i*F : (i+1)*F])
				s := gemm.SumSquares(t.In[i*k:(i+1)*k]) * za // ‖outer(a, dz)‖_F = ‖a‖·‖dz‖
				if t.Bias {
					s += za
				}
				w.sq[l][i] = s
			}
		}
	}
	for _, i := range rows {
		var s float64
		for l := range w.taps {
			sc.sqEx[l] = w.sq[l][i]
			s += sc.sqEx[l]
			w.layerNorms[l][i] = math.Sqrt(sc.sqEx[l])
		}
		w.norms[i] = math.Sqrt(s)
		rule.factors(sc.sqEx, sc.fEx)
		for l, f := range sc.fEx {
			w.factor[l][i] = f
		}
	}
	n := len(rows)
	for l, t := range w.taps {
		coef := sc.coef[:n]
		for q, i := range rows {
			coef[q] = clipCoef[T](w.factor[l][i])
		}
		off := w.offsets[l]
		switch t.Kind {
		case Conv:
			// acc += coefᵀ · G, one GEMM with the chunk's examples as the inner dimension.
			np := t.NumParams()
			gemm.Gemm(1, np, n, gemm.Matrix[T]{Data: coef, Stride: 1, ColMajor: true}, sc.grads[l], np,
				acc[off:off+np], np, nil, gemm.Accumulate)
		case Dense:
			F := t.OutDim
			s := sc.packGZ[:n*F]
			for q, i := range rows {
				c := coef[q]
				for o, v := range t.GradZ[i*F : (i+1)*F] {
					s[q*F+o] = c * v
				}
			}
			w.denseAdd(sc, t, rows, s, acc[off:off+t.NumParams()])
		}
	}
}

// sumChunk adds the chunk's plain gradient sum to acc.
func (w *Workspace[T]) sumChunk(sc *scratch[T], rows []int, acc []T) {
	for l, t := range w.taps {
		off := w.offsets[l]
		switch t.Kind {
		case Conv:
			F, k, P := t.OutDim, t.InDim, t.Positions
			g := acc[off : off+t.NumParams()]
			for _, i := range rows {
				dz, u := t.GradZ[i*F*P:(i+1)*F*P], patchesOf(t, sc.worker, i, sc.patches)
				a := gemm.Matrix[T]{Data: dz, Stride: P}
				if t.PositionsMajor {
					a = gemm.Matrix[T]{Data: dz, Stride: F, ColMajor: true}
				}
				gemm.Gemm(F, k, P, a, u, k, g, k, nil, gemm.Accumulate)
				if t.Bias {
					if t.PositionsMajor {
						gemm.Gemm(1, F, P, gemm.Matrix[T]{Data: sc.ones[:P], Stride: P}, dz, F, g[F*k:], F, nil, gemm.Accumulate)
					} else {
						gemm.Gemm(F, 1, P, gemm.Matrix[T]{Data: dz, Stride: P}, sc.ones[:P], 1, g[F*k:], 1, nil, gemm.Accumulate)
					}
				}
			}
		case Dense:
			F := t.OutDim
			var s []T
			if consecutive(rows) {
				s = t.GradZ[rows[0]*F : (rows[len(rows)-1]+1)*F]
			} else {
				s = sc.packGZ[:len(rows)*F]
				for q, i := range rows {
					copy(s[q*F:(q+1)*F], t.GradZ[i*F:(i+1)*F])
				}
			}
			w.denseAdd(sc, t, rows, s, acc[off:off+t.NumParams()])
		}
	}
}

// denseAdd adds Aᵀ·S (weight) and Σ_q S_q (bias) to acc for the chunk's rows of A and the
// rows S that go with them.
func (w *Workspace[T]) denseAdd(sc *scratch[T], t Tap[T], rows []int, s, acc []T) {
	k, F, n := t.InDim, t.OutDim, len(rows)
	var a []T
	if consecutive(rows) {
		a = t.In[rows[0]*k : (rows[n-1]+1)*k]
	} else {
		a = sc.packIn[:n*k]
		for q, i := range rows {
			copy(a[q*k:(q+1)*k], t.In[i*k:(i+1)*k])
		}
	}
	gemm.Gemm(k, F, n, gemm.Matrix[T]{Data: a, Stride: k, ColMajor: true}, s, F, acc[:k*F], F, nil, gemm.Accumulate)
	if t.Bias {
		gemm.Gemm(1, F, n, gemm.Matrix[T]{Data: sc.ones[:n], Stride: n}, s, F, acc[k*F:k*F+F], F, nil, gemm.Accumulate)
	}
}

func consecutive(rows []int) bool { return rows[len(rows)-1]-rows[0] == len(rows)-1 }

// reduce adds the groups' partial sums, in group order, to dst in the flat layout.
func (w *Workspace[T]) reduce(groups int, dst []float64) {
	const block = 4096
	tmp := w.partial[0]
	// Sum into partial[0] block by block (in parallel over blocks), then scatter.
	parallel.For(runtime.GOMAXPROCS(0), w.d, block, func(_, lo, hi int) {
		for g := 1; g < groups; g++ {
			p := w.partial[g][lo:hi]
			for j, v := range p {
				tmp[lo+j] += v
			}
		}
	})
	for l := range w.taps {
		w.addTap(l, tmp[w.offsets[l]:w.offsets[l]+w.taps[l].NumParams()], dst, false)
	}
}

// addTap writes (overwrite) or adds tap l's gradient g, in tap order, into the flat dst.
func (w *Workspace[T]) addTap(l int, g []T, dst []float64, overwrite bool) {
	t := w.taps[l]
	out := dst[w.offsets[l] : w.offsets[l]+t.NumParams()]
	put := func(j int, v T) {
		if overwrite {
			out[j] = float64(v)
		} else {
			out[j] += float64(v)
		}
	}
	k, F := t.InDim, t.OutDim
	switch {
	case t.InOrder == nil:
		for j, v := range g {
			put(j, v)
		}
		return
	case t.Kind == Conv:
		for f := range F {
			for j, v := range g[f*k : (f+1)*k] {
				put(f*k+t.InOrder[j], v)
			}
		}
	case t.Kind == Dense:
		for j := range k {
			for o, v := range g[j*F : (j+1)*F] {
				put(t.InOrder[j]*F+o, v)
			}
		}
	}
	for j := k * F; j < len(g); j++ {
		put(j, g[j])
	}
}

// clipCoef turns a clip factor f = min(1, C/‖g‖) into the coefficient applied in T. A
// factor of 1 stays exactly 1 (small gradients pass bit for bit). A factor below 1 is
// shrunk by 4 units in the last place of T and rounded down, so that the clipped
// contribution's norm stays at most C in exact arithmetic despite the rounding of the
// coefficient to T (up to half an ulp, ≈ 6e-8 relative in float32), of the products
// c·dZ (dense layers) and of the GEMM that adds one example's coef·g: each rounds by at
// most half an ulp, well inside the 4-ulp margin. The noise is calibrated to C exactly,
// so a contribution above C would break the guarantee, however slightly.
func clipCoef[T Float](f float64) T {
	if !(f < 1) {
		return 1
	}
	if _, ok := any(T(0)).(float32); ok {
		v := f * (1 - 0x1p-22)
		c := float32(v)
		if float64(c) > v {
			c = math.Nextafter32(c, 0)
		}
		return T(c)
	}
	return T(f * (1 - 0x1p-51)) // exact up to one rounding, which stays below f
}
