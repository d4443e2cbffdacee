package clipping

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/parallel"
)

// Workspace turns the per-example gradients of one network's parametrised layers at one
// physical batch size into per-example norms and (clipped) gradient sums. It allocates its
// buffers once and reuses them on every call, so a training step allocates nothing here.
// It knows no layer kind: each layer's Gradient forms its norms and sums (all exact, no
// approximation), the Workspace schedules them and reduces the results.
//
// The real rows are cut into chunks of ChunkRows, and the chunks into at most 16 groups of
// consecutive chunks (fewer, an even number, for models too large for 16 partial sums in
// 32 MiB); the groups run on up to GOMAXPROCS goroutines, each summing into its
// own partial sum, and the partial sums are added in group order. The partition depends only
// on the number of real rows, so results are bit-for-bit reproducible whatever the number
// of cores or the scheduling, and a batch with padding rows gives exactly the result of the
// same real rows without them.
//
// Rows outside the mask are never read: they contribute exactly zero whatever the layers'
// buffers hold there.
//
// A Workspace is not safe for concurrent use.
type Workspace[T num.Float] struct {
	grads   []Gradient[T]
	batch   int
	offsets []int // first flat index of each layer's parameters
	d       int
	chunk   int // real rows per chunk

	// k is the number of rows per example (0: 1); with k > 1 the per-example arrays and
	// chunks count examples, and grads wraps base, the layers' own gradients (group.go).
	k    int
	base []Gradient[T]

	rows       []int       // real rows of the current call
	sq         [][]float64 // [layer][example] squared norm of the example's gradient in that layer
	layerNorms [][]float64 // [layer][example] sqrt(sq)
	norms      []float64   // [example] total norm before clipping
	factor     [][]float64 // [layer][example] C/‖g‖, uncapped (clipped when < 1)

	partial [][]T // [group] partial sums, each layer's in its kind order
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

// evenGroups is the most partial sums a Workspace uses when partialBytes holds fit of
// them: min(fit, maxGroups) rounded down to an even number, at least 2. Groups of
// equal work run on the cores in whole rounds only when their number is a multiple of the
// cores': wrn-16-4's 11 MB gradient fits 3 partial sums, and 3 groups on 2 cores left one
// core idle for a third of every private step (its wall time was 1.35× its CPU time/2).
// The count depends on the model alone, never on GOMAXPROCS, so results stay bit-for-bit
// the same on any number of cores.
func evenGroups(fit int) int {
	return max(2, min(maxGroups, fit)&^1)
}

// scratch is one worker's buffers for one chunk.
type scratch[T num.Float] struct {
	chunk     int
	kinds     []Scratch[T] // per layer
	coef      []T          // the chunk's factors for one layer
	sq        []float64    // the chunk's squared norms for one layer
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

// Filler refreshes the layers' buffers at rows lo…hi−1 in place (a network's forward and
// backward pass over those rows). Workspace calls it concurrently for disjoint ranges, and
// never twice at once with the same worker, so worker can index the caller's per-worker
// scratch.
type Filler func(worker, lo, hi int) error

// NewWorkspace prepares buffers for the gradients of a batch of the given size. The
// gradients' buffers are kept (not copied): the caller refreshes their contents in place
// before each call (or from a Filler). The flat parameter order is the order of grads.
func NewWorkspace[T num.Float](grads []Gradient[T], batch int) (*Workspace[T], error) {
	if batch <= 0 {
		return nil, fmt.Errorf("%w: batch size %d", ErrShape, batch)
	}
	if len(grads) == 0 {
		return nil, fmt.Errorf("%w: no parametrised layers", ErrShape)
	}
	w := &Workspace[T]{
		grads:      append([]Gradient[T](nil), grads...),
		batch:      batch,
		offsets:    make([]int, len(grads)),
		rows:       make([]int, 0, batch),
		sq:         make([][]float64, len(grads)),
		layerNorms: make([][]float64, len(grads)),
		factor:     make([][]float64, len(grads)),
		norms:      make([]float64, batch),
		errs:       make([]error, maxGroups),
	}
	rowScratch := 0
	for l, g := range grads {
		if g == nil {
			return nil, fmt.Errorf("%w: layer %d has no gradient", ErrShape, l)
		}
		if err := g.Check(batch); err != nil {
			return nil, fmt.Errorf("layer %d: %w", l, err)
		}
		w.offsets[l] = w.d
		w.d += g.NumParams()
		w.sq[l] = make([]float64, batch)
		w.layerNorms[l] = make([]float64, batch)
		w.factor[l] = make([]float64, batch)
		rowScratch += g.RowScratch()
	}
	// Default chunk: the per-example gradients of a chunk fill about 256 KiB.
	w.chunk = max(1, min(batch, 256<<10/max(1, rowScratch*num.SizeOf[T]())))
	w.groups = evenGroups(partialBytes / (w.d * num.SizeOf[T]()))
	return w, nil
}

// NumParams is the length of the flat gradient: Σ over layers of Gradient.NumParams.
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
	if err := rule.check(len(w.grads)); err != nil {
		return Stats{}, err
	}
	if err := w.run(mask, rule, dst, fill); err != nil {
		return Stats{}, err
	}
	clipped := 0
	for _, i := range w.rows {
		for l := range w.grads {
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
	if i < 0 || i >= w.batch/w.GroupSize() {
		return fmt.Errorf("%w: example %d outside batch of %d", ErrShape, i, w.batch/w.GroupSize())
	}
	if len(dst) != w.d {
		return fmt.Errorf("%w: gradient buffer has %d entries, want %d", ErrShape, len(dst), w.d)
	}
	for l, gr := range w.grads {
		g := make([]T, gr.NumParams())
		gr.NewScratch(1).Example(-1, i, g)
		gr.Scatter(g, dst[w.offsets[l]:w.offsets[l]+len(g)], true)
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
	if err := w.examples(mask); err != nil {
		return err
	}
	for l := range w.grads {
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
		who := -1 // the worker whose fill the chunk follows
		if fill != nil {
			who = worker
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
					hi = w.batch / w.GroupSize()
				}
				if err := fill(worker, lo*w.GroupSize(), hi*w.GroupSize()); err != nil {
					w.errs[g] = err
					return
				}
			}
			if rule != nil {
				w.clipChunk(sc, who, rows, rule, acc)
			} else {
				w.sumChunk(sc, who, rows, acc)
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
	if sc := w.scratch[worker]; sc != nil && sc.chunk == w.chunk {
		return sc
	}
	sc := &scratch[T]{
		chunk: w.chunk,
		kinds: make([]Scratch[T], len(w.grads)),
		coef:  make([]T, w.chunk),
		sq:    make([]float64, w.chunk),
		sqEx:  make([]float64, len(w.grads)),
		fEx:   make([]float64, len(w.grads)),
	}
	for l, g := range w.grads {
		sc.kinds[l] = g.NewScratch(w.chunk)
	}
	w.scratch[worker] = sc
	return sc
}

// clipChunk forms the norms of the chunk's real rows, their clip factors, and adds the
// chunk's clipped sum to acc.
func (w *Workspace[T]) clipChunk(sc *scratch[T], worker int, rows []int, rule Rule, acc []T) {
	n := len(rows)
	for l, ks := range sc.kinds {
		sq := sc.sq[:n]
		ks.SquaredNorms(worker, rows, sq)
		for q, i := range rows {
			w.sq[l][i] = sq[q]
		}
	}
	for _, i := range rows {
		var s float64
		for l := range w.grads {
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
	for l, ks := range sc.kinds {
		coef := sc.coef[:n]
		for q, i := range rows {
			coef[q] = clipCoef[T](w.factor[l][i])
		}
		off := w.offsets[l]
		ks.ClippedSum(worker, rows, coef, acc[off:off+w.grads[l].NumParams()])
	}
}

// sumChunk adds the chunk's plain gradient sum to acc.
func (w *Workspace[T]) sumChunk(sc *scratch[T], worker int, rows []int, acc []T) {
	for l, ks := range sc.kinds {
		off := w.offsets[l]
		ks.Sum(worker, rows, acc[off:off+w.grads[l].NumParams()])
	}
}

// reduce adds the groups' partial sums, in group order, to dst in the flat layout.
func (w *Workspace[T]) reduce(groups int, dst []float64) {
	const block = 4096
	tmp := w.partial[0]
	// Sum into partial[0] block by block (in parallel over blocks), then scatter.
	// Each addition is tmp += 1·p on internal/gemm's vector kernels (k = 1 and Accumulate:
	// one rounding of tmp + p per value, as the scalar loop, so the same bits on every path).
	one := []T{1}
	parallel.For(runtime.GOMAXPROCS(0), w.d, block, func(_, lo, hi int) {
		n := hi - lo
		for g := 1; g < groups; g++ {
			gemm.Gemm(1, n, 1, gemm.Matrix[T]{Data: one, Stride: 1}, w.partial[g][lo:hi], n, tmp[lo:hi], n, nil, gemm.Accumulate)
		}
	})
	for l, g := range w.grads {
		lo, hi := w.offsets[l], w.offsets[l]+g.NumParams()
		g.Scatter(tmp[lo:hi], dst[lo:hi], false)
	}
}

// clipCoef turns the ratio f = C/‖g‖ into the coefficient applied in T:
// min(1, f·(1 − 4 ulps of T)), rounded down. The margin applies to every example, not
// only to those above C: the norm ‖g‖ is computed (for dense layers as ‖a‖·‖dz‖) while
// the contribution is made of rounded products, so an example whose computed norm is
// just ≤ C could contribute a little above it (issue 23 item 7 measured 1.00000000028·C).
// With the margin the contribution's norm stays at most C in exact arithmetic despite
// the rounding of the coefficient to T (up to half an ulp, ≈ 6e-8 relative in float32),
// of the products c·dZ (dense layers) and of the GEMM that adds one example's coef·g:
// each rounds by at most half an ulp, well inside the 4-ulp margin. An example with
// ‖g‖ ≤ C·(1 − 4 ulps) gets exactly 1 (small gradients pass bit for bit). The noise is
// calibrated to C exactly, so a contribution above C would break the guarantee, however
// slightly.
func clipCoef[T num.Float](f float64) T {
	if _, ok := any(T(0)).(float32); ok {
		v := f * (1 - 0x1p-22)
		if !(v < 1) {
			return 1
		}
		c := float32(v)
		if float64(c) > v {
			c = math.Nextafter32(c, 0)
		}
		return T(c)
	}
	v := f * (1 - 0x1p-51) // exact up to one rounding, which stays below f
	if !(v < 1) {
		return 1
	}
	return T(v)
}
