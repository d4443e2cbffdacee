package layers

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// ErrNotNative reports a layer stack that Native cannot run: a layer type without a native
// kernel (any Layer implemented outside this package). Such a network runs on Gorgonia.
var ErrNotNative = errors.New("layers: no native kernel")

// Native runs a stack of this package's layers directly on preallocated buffers, without a
// Gorgonia graph: the forward pass, and the backward pass from the gradient at the logits to
// every parametrised layer's pre-activation (the taps), never to the weights. It computes
// exactly what the Gorgonia graph of the same layers computes (tests hold the two to 1e-12
// in float64), in a different order and memory layout:
//
//   - images are NHWC inside (channels innermost); the input arrives CHW and Flatten writes
//     CHW order, so weights and the flat parameter layout are those of the Gorgonia graph;
//   - a convolution's im2col patch is ordered (kh, kw, channel), so a patch row is a few
//     contiguous runs of the input; the tap's InOrder maps it back to the weight layout,
//     and its GradZ is positions-major ([B × positions × filters]);
//   - a Conv2D or Dense followed by ReLU or Tanh is one step (bias and ReLU applied as the
//     GEMM stores its result);
//   - work is split by rows (examples): Forward and Backward handle rows lo…hi−1 and may
//     run concurrently for disjoint ranges on different workers, each with its own scratch.
//
// Only the network input, the logits and the taps are batch-sized; everything else lives in
// per-worker scratch of Chunk rows, so one chunk's forward and backward stay in cache.
type Native[T num.Float] struct {
	batch  int
	train  bool
	chunk  int
	ops    []nativeOp[T]
	acts   []actBuf[T] // acts[i] is the input of ops[i]; acts[len(ops)] the logits
	first  int         // first parametrised op: the backward pass stops there
	taps   []clipping.Gradient[T]
	gradSz int // largest activation, for the two gradient buffers
	// start is the first op Forward runs: the ops of the layers NewNativeAfter skips
	// come before it, and Input is their output (acts[start]); frontForward runs them.
	start int
	front bool // frontForward may run: the raw input is batch-sized
	// own is the program's Input buffer; acts[start] is it or the caller's (ReadInput).
	own []T
	// inTaps are the Dense taps, whose In ReadInput moves when it is the input's storage
	// (a Conv2D tap reads acts[o.in] when it runs).
	inTaps []*DenseGradient[T]

	mu      sync.Mutex
	scratch []*nativeScratch[T]
}

// nativeOp is one step of a Native.
type nativeOp[T num.Float] interface {
	// forward computes n rows of out from in (rows lo… of the batch).
	forward(sc *nativeScratch[T], k int, in, out []T, n, lo int)
	// backward turns gOut, the gradient at n rows of out, into gIn at in (nil when no
	// gradient is needed below), writing a parametrised op's tap rows on the way.
	backward(sc *nativeScratch[T], k int, in, out, gOut, gIn []T, n, lo int)
	// scratchSize is the per-row scratch the op needs: values of T and int32 indices.
	scratchSize() (floats, indices int)
	// prepare re-reads the parameters (packed copies) before a run.
	prepare()
	// alias says the op's output is its input (nothing to compute forward; backward
	// is skipped too unless the op is a backwardRunner).
	alias() bool
}

// actBuf is an activation: batch-sized storage, or scratch slot slot of each worker.
type actBuf[T num.Float] struct {
	size  int
	batch []T
	slot  int
}

// nativeScratch is one worker's memory for one chunk of rows.
type nativeScratch[T num.Float] struct {
	lo, hi  int         // rows of the last Forward (their conv patches are in floats)
	acts    [][]T       // activation slots
	grads   [2][]T      // gradient ping-pong buffers
	floats  [][]T       // per op
	indices [][]int32   // per op
	wide    [][]float64 // per op (wideScratcher), not per row
}

// wideScratcher is an op that needs float64 scratch of its own per worker (per-channel
// statistics), whatever T is and however many rows a chunk has.
type wideScratcher interface{ wideScratch() int }

// activation is the layout of an activation inside Native.
type activation struct {
	image   bool // h × w × c image, else a flat vector of n values
	nhwc    bool // image stored channels innermost (CHW otherwise)
	h, w, c int
	n       int
}

func (a activation) String() string {
	if a.image {
		return fmt.Sprintf("%d×%d×%d image", a.c, a.h, a.w)
	}
	return fmt.Sprintf("%d-vector", a.n)
}

// toNHWCFree says whether a CHW image is already NHWC (one channel, or one pixel).
func (a activation) toNHWCFree() bool { return a.c == 1 || a.h*a.w == 1 }

type actFunc int

const (
	actNone actFunc = iota
	actReLU
	actTanh
)

// nativeLayer is a Layer with a native kernel: compileNative adds its op (or, fused with
// the activation that follows, ops) to c, a *compiler[float32] or *compiler[float64].
// Each layer's file implements it beside the layer's Gorgonia fragment; compileAs turns
// the dtype-free call into the layer's generic compile function.
type nativeLayer interface {
	compileNative(c nativeCompiler) error
}

// nativeCompiler is *compiler[float32] or *compiler[float64].
type nativeCompiler interface {
	dtype() string
	current() Layer
}

// compileAs calls f32 or f64 with l, whichever dtype c compiles for. The layer being
// compiled must be an L or *L: a type that only embeds L inherits its compileNative but
// may compute something else, so it has no native kernel.
func compileAs[L Layer](c nativeCompiler, l L, f32 func(*compiler[float32], L) error, f64 func(*compiler[float64], L) error) error {
	if !own(c.current(), l) {
		return fmt.Errorf("%w: layer %T", ErrNotNative, c.current())
	}
	switch c := c.(type) {
	case *compiler[float32]:
		return f32(c, l)
	case *compiler[float64]:
		return f64(c, l)
	}
	panic(fmt.Sprintf("layers: compiler for %s", c.dtype()))
}

// fusedActivation is an activation a parametrised op can apply as it stores its output
// (ReLU and Tanh): a Conv2D or Dense followed by one is one op.
// fusedAct returns the function and the receiver (see own).
type fusedActivation interface{ fusedAct() (actFunc, Layer) }

// own says l is self or points to it: not a type that embeds self's and so inherits its
// methods while it may compute something else.
func own(l, self Layer) bool {
	t, s := reflect.TypeOf(l), reflect.TypeOf(self)
	return t == s || t == reflect.PointerTo(s)
}

// reordered is a layer that takes its flat input in any order, given which input each
// position holds (Dense permutes its weight rows): a Flatten before it leaves an NHWC
// image as it is instead of transposing it.
type reordered interface{ acceptsOrder() }

// tapOp is a parametrised op: it writes its layer's per-example gradient buffers in
// Backward and hands them over as a clipping.Gradient once Native knows where every
// activation lives.
type tapOp[T num.Float] interface {
	nativeOp[T]
	// gradient is the layer's per-example gradient; op k of nv is this op.
	gradient(nv *Native[T], k int) clipping.Gradient[T]
	// tapRow is the number of values per row the op's tap writes in Backward.
	tapRow() int
}

// compiler is NewNative's state while it walks the layers.
type compiler[T num.Float] struct {
	nv           *Native[T]
	layers       []Layer
	i            int // the layer being compiled
	params       [][]T
	batch        int
	train        bool
	cur          activation
	shapes       []activation
	needBatch    []bool
	pendingOrder []int // a Flatten left NHWC order for the reordered layer after it
}

func (c *compiler[T]) dtype() string { return fmt.Sprintf("%T", T(0)) }

func (c *compiler[T]) current() Layer { return c.layers[c.i] }

// add appends op with output shape out; inBatch says its input must be batch-sized (a
// tap reads it after the chunk's scratch is gone).
func (c *compiler[T]) add(op nativeOp[T], out activation, inBatch bool) {
	nv := c.nv
	if _, ok := op.(tapOp[T]); ok && nv.first < 0 {
		nv.first = len(nv.ops)
	}
	nv.ops = append(nv.ops, op)
	c.shapes = append(c.shapes, out)
	c.needBatch[len(c.needBatch)-1] = c.needBatch[len(c.needBatch)-1] || inBatch
	c.needBatch = append(c.needBatch, false)
	c.cur = out
}

// inputIndex is the activation index of the next op's input.
func (c *compiler[T]) inputIndex() int { return len(c.shapes) - 1 }

// toNHWC makes the current image channels-innermost.
func (c *compiler[T]) toNHWC() {
	if c.cur.image && !c.cur.nhwc {
		next := c.cur
		next.nhwc = true
		c.add(&transposeOp[T]{h: c.cur.h, w: c.cur.w, c: c.cur.c, toNHWC: true}, next, false)
	}
}

// image checks the current activation is an image and makes it NHWC.
func (c *compiler[T]) image(what string) error {
	if !c.cur.image {
		return fmt.Errorf("layers: %s on a %v", what, c.cur)
	}
	c.toNHWC()
	return nil
}

// next is the layer after the current one, or nil.
func (c *compiler[T]) next() Layer {
	if c.i+1 < len(c.layers) {
		return c.layers[c.i+1]
	}
	return nil
}

// fuse takes the activation after the current layer into its op, when it is one that can
// be fused, and returns it (actNone otherwise).
func (c *compiler[T]) fuse() actFunc {
	if f, ok := c.next().(fusedActivation); ok {
		if act, self := f.fusedAct(); own(c.next(), self) {
			c.i++
			return act
		}
	}
	return actNone
}

// takeOrder returns (and clears) the input order a Flatten left.
func (c *compiler[T]) takeOrder() []int {
	o := c.pendingOrder
	c.pendingOrder = nil
	return o
}

// NewNative compiles layers for input shape in (per example, CHW or flat) at the given
// batch size. params[i] holds views of layer i's parameters, one per ParamSpec, in the
// flat layout; Native reads them in Prepare. With train, it keeps the taps and can run
// Backward; without, it only runs Forward. It returns ErrNotNative, naming the layer, for
// a layer without a native kernel (any layer of another package).
func NewNative[T num.Float](layers []Layer, in []int, batch int, params [][][]T, train bool) (*Native[T], error) {
	return NewNativeAfter(layers, in, batch, params, train, 0)
}

// NewNativeAfter is NewNative for a network whose first skip layers (parameter-free ones)
// have already been applied: it compiles all the layers exactly as NewNative does (so the
// ops and the chunk size are NewNative's), but Forward starts after the ops of
// layers[:skip], and Input is their output in Native's internal layout (an image NHWC, a
// Flatten's vector in the order the next layer reads it): InputLen values per example, as
// NewNativeFront computes them, bit for bit.
func NewNativeAfter[T num.Float](layers []Layer, in []int, batch int, params [][][]T, train bool, skip int) (*Native[T], error) {
	return newNativeAfter(layers, in, batch, params, train, skip, false)
}

// newNativeAfter is NewNativeAfter; with front, the raw input stays batch-sized for
// frontInput and frontForward, which run the skipped ops (NewNativeFront).
func newNativeAfter[T num.Float](layers []Layer, in []int, batch int, params [][][]T, train bool, skip int, front bool) (*Native[T], error) {
	if skip < 0 || skip >= len(layers) {
		return nil, fmt.Errorf("layers: skip %d of %d layers", skip, len(layers))
	}
	for i, l := range layers[:skip] {
		if (i < len(params) && len(params[i]) > 0) || !Skippable(l) {
			return nil, fmt.Errorf("layers: layer %d (%T) cannot be skipped: only parameter-free per-example layers can", i, l)
		}
	}
	if batch <= 0 {
		return nil, fmt.Errorf("layers: batch size %d", batch)
	}
	if len(params) != len(layers) {
		return nil, fmt.Errorf("layers: %d parameter lists for %d layers", len(params), len(layers))
	}
	nv := &Native[T]{batch: batch, train: train, first: -1, front: front}
	cur := activation{n: num.Prod(in)}
	if len(in) == 3 {
		cur = activation{image: true, h: in[1], w: in[2], c: in[0], n: num.Prod(in)}
		cur.nhwc = cur.toNHWCFree()
	}
	c := &compiler[T]{nv: nv, layers: layers, batch: batch, train: train, cur: cur,
		shapes: []activation{cur}, needBatch: []bool{true}} // the input is batch-sized: the caller fills it
	for c.i = 0; c.i < len(layers); c.i++ {
		if c.i == skip {
			nv.start = len(nv.ops)
		}
		l := layers[c.i]
		c.params = params[c.i]
		if want := len(l.Params(shapeOf(c.cur))); len(c.params) != want {
			return nil, fmt.Errorf("layers: layer %d (%s) has %d parameter views, want %d", c.i, l.Kind(), len(c.params), want)
		}
		nl, ok := l.(nativeLayer)
		if !ok {
			return nil, fmt.Errorf("%w: layer %d (%s, %T)", ErrNotNative, c.i, l.Kind(), l)
		}
		if err := nl.compileNative(c); err != nil {
			if errors.Is(err, ErrNotNative) {
				return nil, fmt.Errorf("%w: layer %d (%s, %T)", ErrNotNative, c.i, l.Kind(), l)
			}
			return nil, err
		}
	}
	if c.cur.image {
		return nil, fmt.Errorf("layers: network output is a %v, not a vector", c.cur)
	}
	if nv.first < 0 && train {
		return nil, fmt.Errorf("layers: no parametrised layer")
	}
	c.needBatch[len(c.needBatch)-1] = true // logits
	// The chunk size is sized as without skip (the same rows per call, so the same sums);
	// the skipped ops' output is then made batch-sized: the caller fills it.
	sized := slices.Clone(c.needBatch)
	c.needBatch[nv.start] = true
	if nv.start > 0 && !front {
		c.needBatch[0] = false // no one fills it (unless Input shares its storage)
	}
	nv.layout(c.shapes, c.needBatch, sized)
	return nv, nil
}

func shapeOf(a activation) []int {
	if a.image {
		return []int{a.c, a.h, a.w}
	}
	return []int{a.n}
}

// layout assigns storage to the activations, merging aliases, and picks the chunk size.
// sized is needBatch as the chunk size is computed from.
func (nv *Native[T]) layout(shapes []activation, needBatch, sized []bool) {
	// An alias op's output shares its input's storage: batch-sized if either must be.
	for _, nb := range [][]bool{needBatch, sized} {
		for i := len(nv.ops) - 1; i >= 0; i-- {
			if nv.ops[i].alias() && nb[i+1] {
				nb[i] = true
			}
		}
	}
	nv.acts = make([]actBuf[T], len(shapes))
	perRow, slot := 0, 0
	for i, s := range shapes {
		nv.gradSz = max(nv.gradSz, s.n)
		if i > 0 && nv.ops[i-1].alias() {
			nv.acts[i] = nv.acts[i-1]
			continue
		}
		nv.acts[i] = actBuf[T]{size: s.n, slot: -1}
		if needBatch[i] {
			nv.acts[i].batch = make([]T, nv.batch*s.n)
		} else {
			nv.acts[i].slot = slot
			slot++
		}
		if !sized[i] {
			perRow += s.n
		}
	}
	perRow += 2 * nv.gradSz
	for _, op := range nv.ops {
		f, x := op.scratchSize()
		perRow += f + x/2
	}
	// Tap rows written and read in the same call count too.
	for _, op := range nv.ops {
		if t, ok := op.(tapOp[T]); ok {
			perRow += t.tapRow()
		}
	}
	// A chunk's working set of about 1 MiB stays in a core's L2 — but at least 4 rows
	// when a Dense layer's weights exceed 1 MiB: it reads its whole weight matrix once per
	// chunk, which for one row (the CIFAR-10 CNN's patches alone fill 1 MiB) made its 885k
	// weights a matrix-vector product streamed from memory per example (9 % of a private
	// CIFAR-10 step's CPU time). Else at least 2: the residual networks' rows are far
	// past 1 MiB each, and 4 rows cost wide-cnn-28 20 % more CPU time than 2.
	least := 2
	for _, op := range nv.ops {
		if d, ok := op.(*denseOp[T]); ok && d.nIn*d.nOut*num.SizeOf[T]() >= 1<<20 {
			least = 4
		}
	}
	// A network whose parametrised layers are all Dense (a linear model or an MLP on
	// features) does little per row besides reading it: chunks sized to L2 cut
	// scatter-linear-cifar10's batch of 256 into 16 chunks of 16 rows, so its weight was
	// read 16 times a step, its clipped sums were products of 16 rows, and 16 partial sums
	// were added. At least 64 rows (4 chunks, 2 a core) made its AVX2 step 1.1–1.3× faster
	// (3 alternating runs; docs/performance.md).
	if denseOnly(nv.ops) {
		least = max(least, 64)
	}
	nv.chunk = max(1, min(nv.batch, max(least, (1<<20)/(perRow*num.SizeOf[T]()))))
	nv.own = nv.acts[nv.start].batch
	// The taps read activations, whose storage is known now.
	for k, op := range nv.ops {
		if t, ok := op.(tapOp[T]); ok {
			nv.taps = append(nv.taps, t.gradient(nv, k))
		}
	}
}

// Input is the batch input, [batch × num.Prod(in)], each example CHW (as datasets produce it),
// or for NewNativeAfter the skipped layers' output, [batch × InputLen] in Native's layout.
// The caller writes rows before Forward reads them, or has Forward read its own rows in
// place (ReadInput).
func (nv *Native[T]) Input() []T { return nv.own }

// ReadInput makes Forward read the input rows from x, [batch × InputLen] in Input's layout,
// where they are instead of from Input, until the next call; ReadInput(nil) reads Input
// again. It saves copying each batch (a linear model on features does little else per row).
//
// x is never written, but it is read again after Forward: by Backward and by the taps
// (per-example norms, clipped sums, PerExample), so it must stay unchanged until the
// program's results have been used. Rows the caller leaves out of a step (padding) may
// hold anything: every op computes a row from that row alone, and the clipping workspace
// never reads rows outside its mask. Call it between runs, not during one. It panics for
// x of the wrong length and for a program whose front end writes Input (NewNativeFront).
func (nv *Native[T]) ReadInput(x []T) {
	if nv.front {
		panic("layers: ReadInput on a program whose front end writes its input")
	}
	if x == nil {
		x = nv.own
	}
	if len(x) != len(nv.own) {
		panic(fmt.Sprintf("layers: ReadInput of %d values, want %d rows × %d", len(x), nv.batch, nv.acts[nv.start].size))
	}
	cur := nv.acts[nv.start].batch
	if sameStorage(cur, x) {
		return
	}
	// Alias ops (a Flatten) share the input's storage: move every view of it.
	for i := range nv.acts {
		if sameStorage(nv.acts[i].batch, cur) {
			nv.acts[i].batch = x
		}
	}
	for _, g := range nv.inTaps {
		if sameStorage(g.In, cur) {
			g.In = x
		}
	}
}

// sameStorage says whether a is the non-empty b, the same values in the same memory.
func sameStorage[T any](a, b []T) bool { return len(a) == len(b) && len(b) > 0 && &a[0] == &b[0] }

// InputLen is the number of values per example of Input.
func (nv *Native[T]) InputLen() int { return nv.acts[nv.start].size }

// frontInput is the raw batch input, [batch × num.Prod(in)] CHW, of a newNativeAfter
// program with front: the input of the skipped layers, which frontForward reads.
func (nv *Native[T]) frontInput() []T { return nv.acts[0].batch }

// frontForward runs the skipped layers' ops on rows lo…hi−1 (at most Chunk) of frontInput,
// writing those rows of Input.
func (nv *Native[T]) frontForward(worker, lo, hi int) {
	if !nv.front {
		panic("layers: front end run on a program compiled without it")
	}
	nv.checkRows(lo, hi)
	sc := nv.scratchFor(worker)
	for k, op := range nv.ops[:nv.start] {
		if !op.alias() {
			op.forward(sc, k, nv.rows(sc, k, lo, hi), nv.rows(sc, k+1, lo, hi), hi-lo, lo)
		}
	}
}

// Logits is the network output, [batch × classes], written by Forward.
func (nv *Native[T]) Logits() []T { return nv.acts[len(nv.acts)-1].batch }

// Taps are the parametrised layers' per-example gradients (train only), in layer order;
// Backward writes their rows.
func (nv *Native[T]) Taps() []clipping.Gradient[T] { return nv.taps }

// Chunk is the number of rows per Forward/Backward call that keeps one call's working set
// in cache.
func (nv *Native[T]) Chunk() int { return nv.chunk }

// Prepare re-reads the parameters. Call it after they change and before Forward.
func (nv *Native[T]) Prepare() {
	for _, op := range nv.ops {
		op.prepare()
	}
}

func (nv *Native[T]) scratchFor(worker int) *nativeScratch[T] {
	nv.mu.Lock()
	defer nv.mu.Unlock()
	for len(nv.scratch) <= worker {
		nv.scratch = append(nv.scratch, nil)
	}
	if sc := nv.scratch[worker]; sc != nil {
		return sc
	}
	sc := &nativeScratch[T]{floats: make([][]T, len(nv.ops)), indices: make([][]int32, len(nv.ops))}
	for i, a := range nv.acts {
		if a.batch == nil && (i == 0 || !nv.ops[i-1].alias()) {
			sc.acts = append(sc.acts, make([]T, nv.chunk*a.size))
		}
	}
	if nv.train {
		sc.grads = [2][]T{make([]T, nv.chunk*nv.gradSz), make([]T, nv.chunk*nv.gradSz)}
	}
	for k, op := range nv.ops {
		f, x := op.scratchSize()
		sc.floats[k] = make([]T, nv.chunk*f)
		sc.indices[k] = make([]int32, nv.chunk*x)
		if w, ok := op.(wideScratcher); ok {
			if sc.wide == nil {
				sc.wide = make([][]float64, len(nv.ops))
			}
			sc.wide[k] = make([]float64, w.wideScratch())
		}
	}
	nv.scratch[worker] = sc
	return sc
}

func (nv *Native[T]) rows(sc *nativeScratch[T], i, lo, hi int) []T {
	a := nv.acts[i]
	if a.batch != nil {
		return a.batch[lo*a.size : hi*a.size]
	}
	return sc.acts[a.slot][:(hi-lo)*a.size]
}

func (nv *Native[T]) checkRows(lo, hi int) {
	if lo < 0 || hi > nv.batch || hi-lo > nv.chunk || lo >= hi {
		panic(fmt.Sprintf("layers: rows %d…%d of a batch of %d in chunks of %d", lo, hi-1, nv.batch, nv.chunk))
	}
}

// Forward computes the logits of rows lo…hi−1 (at most Chunk of them) from the input rows.
// Calls for disjoint ranges may run concurrently with distinct workers.
func (nv *Native[T]) Forward(worker, lo, hi int) {
	nv.checkRows(lo, hi)
	sc := nv.scratchFor(worker)
	sc.lo, sc.hi = lo, hi
	for k := nv.start; k < len(nv.ops); k++ {
		if op := nv.ops[k]; !op.alias() {
			op.forward(sc, k, nv.rows(sc, k, lo, hi), nv.rows(sc, k+1, lo, hi), hi-lo, lo)
		}
	}
}

// backwardRunner is an alias op (its output is its input's storage, forward does
// nothing) whose backward still runs: a residual fork.
type backwardRunner interface{ backwardRuns() }

func runsBackward(op any) bool {
	_, ok := op.(backwardRunner)
	return ok
}

// gradTargeter is an op that keeps the gradient at its output in a buffer of its own (a
// Conv2D's or Dense's tap, dZ; a residual join's or switch's scratch): outGrad is that
// buffer's rows lo…lo+n−1 (k the op's index, sc the worker's scratch), or nil.
type gradTargeter[T num.Float] interface {
	outGrad(sc *nativeScratch[T], k, lo, n int) []T
}

// gradTarget is where op k's backward writes its input gradient: straight into the tap of
// the op below it (past alias ops) where that op keeps one, which then computes its
// activation's gradient there in place instead of copying it from a ping-pong buffer;
// nil otherwise.
func (nv *Native[T]) gradTarget(sc *nativeScratch[T], k, lo, n int) []T {
	j := k - 1
	for j >= 0 && nv.ops[j].alias() && !runsBackward(nv.ops[j]) {
		j--
	}
	if j < 0 {
		return nil
	}
	if t, ok := nv.ops[j].(gradTargeter[T]); ok {
		return t.outGrad(sc, j, lo, n)
	}
	return nil
}

// Backward follows Forward on the same worker and rows: from gradLogits, the gradient of
// the loss at the logits of rows lo…hi−1 ([(hi−lo) × classes]), it writes those rows of
// every tap (the gradient at each parametrised layer's pre-activation).
func (nv *Native[T]) Backward(worker, lo, hi int, gradLogits []T) {
	nv.checkRows(lo, hi)
	if !nv.train {
		panic("layers: Backward on a forward-only Native")
	}
	n := hi - lo
	sc := nv.scratchFor(worker)
	g, which := gradLogits[:n*nv.acts[len(nv.acts)-1].size], 0
	for k := len(nv.ops) - 1; k >= nv.first; k-- {
		op := nv.ops[k]
		if op.alias() && !runsBackward(op) {
			continue
		}
		var gIn []T
		if k > nv.first {
			if gIn = nv.gradTarget(sc, k, lo, n); gIn == nil {
				gIn = sc.grads[which][:n*nv.acts[k].size]
				which ^= 1
			}
		}
		op.backward(sc, k, nv.rows(sc, k, lo, hi), nv.rows(sc, k+1, lo, hi), g, gIn, n, lo)
		g = gIn
	}
}

// denseOnly says whether every parametrised op of ops is a Dense.
func denseOnly[T num.Float](ops []nativeOp[T]) bool {
	found := false
	for _, op := range ops {
		if _, ok := op.(tapOp[T]); !ok {
			continue
		}
		if _, ok := op.(*denseOp[T]); !ok {
			return false
		}
		found = true
	}
	return found
}
