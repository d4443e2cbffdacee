package layers

import (
	"errors"
	"fmt"
	"sync"

	"github.com/privtrain/privtrain/clipping"
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
type Native[T clipping.Float] struct {
	batch  int
	train  bool
	chunk  int
	ops    []nativeOp[T]
	acts   []actBuf[T] // acts[i] is the input of ops[i]; acts[len(ops)] the logits
	first  int         // first parametrised op: the backward pass stops there
	taps   []clipping.Tap[T]
	gradSz int // largest activation, for the two gradient buffers

	mu      sync.Mutex
	scratch []*nativeScratch[T]
}

// nativeOp is one step of a Native.
type nativeOp[T clipping.Float] interface {
	// forward computes n rows of out from in (rows lo… of the batch).
	forward(sc *nativeScratch[T], k int, in, out []T, n, lo int)
	// backward turns gOut, the gradient at n rows of out, into gIn at in (nil when no
	// gradient is needed below), writing a parametrised op's tap rows on the way.
	backward(sc *nativeScratch[T], k int, in, out, gOut, gIn []T, n, lo int)
	// scratchSize is the per-row scratch the op needs: values of T and int32 indices.
	scratchSize() (floats, indices int)
	// prepare re-reads the parameters (packed copies) before a run.
	prepare()
	// alias says the op's output is its input (nothing to compute).
	alias() bool
}

// actBuf is an activation: batch-sized storage, or scratch slot slot of each worker.
type actBuf[T clipping.Float] struct {
	size  int
	batch []T
	slot  int
}

// nativeScratch is one worker's memory for one chunk of rows.
type nativeScratch[T clipping.Float] struct {
	lo, hi  int       // rows of the last Forward (their conv patches are in floats)
	acts    [][]T     // activation slots
	grads   [2][]T    // gradient ping-pong buffers
	floats  [][]T     // per op
	indices [][]int32 // per op
}

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

// NewNative compiles layers for input shape in (per example, CHW or flat) at the given
// batch size. params[i] holds views of layer i's parameters, one per ParamSpec, in the
// flat layout; Native reads them in Prepare. With train, it keeps the taps and can run
// Backward; without, it only runs Forward. It returns ErrNotNative for a layer of another
// package.
func NewNative[T clipping.Float](layers []Layer, in []int, batch int, params [][][]T, train bool) (*Native[T], error) {
	if batch <= 0 {
		return nil, fmt.Errorf("layers: batch size %d", batch)
	}
	if len(params) != len(layers) {
		return nil, fmt.Errorf("layers: %d parameter lists for %d layers", len(params), len(layers))
	}
	nv := &Native[T]{batch: batch, train: train, first: -1}
	cur := activation{n: prod(in)}
	if len(in) == 3 {
		cur = activation{image: true, h: in[1], w: in[2], c: in[0], n: prod(in)}
		cur.nhwc = cur.toNHWCFree()
	}
	shapes := []activation{cur}
	needBatch := []bool{true} // the input is batch-sized: the caller fills it
	add := func(op nativeOp[T], out activation, inBatch bool) {
		nv.ops = append(nv.ops, op)
		shapes = append(shapes, out)
		needBatch[len(needBatch)-1] = needBatch[len(needBatch)-1] || inBatch
		needBatch = append(needBatch, false)
	}
	var pendingOrder []int // a Flatten left NHWC order for the Dense that follows it
	toNHWC := func() {
		if cur.image && !cur.nhwc {
			next := cur
			next.nhwc = true
			add(&transposeOp[T]{h: cur.h, w: cur.w, c: cur.c, toNHWC: true}, next, false)
			cur = next
		}
	}
	for i := 0; i < len(layers); i++ {
		l := layers[i]
		ps := params[i]
		if want := len(l.Params(shapeOf(cur))); len(ps) != want {
			return nil, fmt.Errorf("layers: layer %d (%s) has %d parameter views, want %d", i, l.Kind(), len(ps), want)
		}
		act := actNone
		if i+1 < len(layers) {
			switch layers[i+1].(type) {
			case ReLU, *ReLU:
				act = actReLU
			case Tanh, *Tanh:
				act = actTanh
			}
		}
		switch l := deref(l).(type) {
		case Conv2D:
			if !cur.image {
				return nil, fmt.Errorf("layers: conv on a %v", cur)
			}
			toNHWC()
			op, out, err := newConvOp(l, cur, batch, ps, act, train, nv.first >= 0)
			if err != nil {
				return nil, err
			}
			if nv.first < 0 {
				nv.first = len(nv.ops)
			}
			add(op, out, train) // the tap rebuilds patches from the input
			op.in = len(shapes) - 2
			nv.taps = append(nv.taps, op.tap())
			if act != actNone {
				i++
			}
		case Dense:
			if cur.image {
				return nil, fmt.Errorf("layers: dense on a %v; put a Flatten before it", cur)
			}
			op := newDenseOp(l, cur.n, batch, ps, act, train, pendingOrder)
			pendingOrder = nil
			if nv.first < 0 {
				nv.first = len(nv.ops)
			}
			add(op, activation{n: l.Units}, train) // the input is the tap's In
			op.in = len(shapes) - 2
			nv.taps = append(nv.taps, op.tap())
			if act != actNone {
				i++
			}
		case MaxPool2D:
			if !cur.image {
				return nil, fmt.Errorf("layers: maxpool on a %v", cur)
			}
			toNHWC()
			op, out, err := newMaxPoolOp[T](l, cur)
			if err != nil {
				return nil, err
			}
			add(op, out, false)
		case CenterCrop:
			if !cur.image {
				return nil, fmt.Errorf("layers: crop on a %v", cur)
			}
			toNHWC()
			if _, err := l.OutputShape(shapeOf(cur)); err != nil {
				return nil, err
			}
			op := &cropOp[T]{h: cur.h, w: cur.w, c: cur.c, oh: l.Height, ow: l.Width,
				top: (cur.h - l.Height) / 2, left: (cur.w - l.Width) / 2}
			out := cur
			out.h, out.w, out.n = l.Height, l.Width, l.Height*l.Width*cur.c
			add(op, out, false)
		case ReLU:
			add(&activationOp[T]{f: actReLU}, cur, false)
		case Tanh:
			add(&activationOp[T]{f: actTanh}, cur, false)
		case Flatten:
			out := activation{n: cur.n}
			switch {
			case !cur.image || !cur.nhwc || cur.toNHWCFree():
				add(aliasOp[T]{}, out, false)
			case i+1 < len(layers) && isDense(layers[i+1]):
				// Leave the NHWC order; the Dense permutes its weight rows instead
				// (flat input j' = p·C + c is weight row c·HW + p).
				hw := cur.h * cur.w
				pendingOrder = make([]int, cur.n)
				for p := range hw {
					for c := range cur.c {
						pendingOrder[p*cur.c+c] = c*hw + p
					}
				}
				add(aliasOp[T]{}, out, false)
			default:
				add(&transposeOp[T]{h: cur.h, w: cur.w, c: cur.c}, out, false)
			}
		default:
			return nil, fmt.Errorf("%w: %T", ErrNotNative, l)
		}
		cur = shapes[len(shapes)-1]
	}
	if cur.image {
		return nil, fmt.Errorf("layers: network output is a %v, not a vector", cur)
	}
	if nv.first < 0 && train {
		return nil, fmt.Errorf("layers: no parametrised layer")
	}
	needBatch[len(needBatch)-1] = true // logits
	nv.layout(shapes, needBatch)
	return nv, nil
}

func isDense(l Layer) bool {
	_, ok := deref(l).(Dense)
	return ok
}

// deref lets pointer layers (&Conv2D{…}) through the type switch.
func deref(l Layer) Layer {
	switch p := l.(type) {
	case *Conv2D:
		return *p
	case *Dense:
		return *p
	case *MaxPool2D:
		return *p
	case *CenterCrop:
		return *p
	case *ReLU:
		return *p
	case *Tanh:
		return *p
	case *Flatten:
		return *p
	}
	return l
}

func shapeOf(a activation) []int {
	if a.image {
		return []int{a.c, a.h, a.w}
	}
	return []int{a.n}
}

// layout assigns storage to the activations, merging aliases, and picks the chunk size.
func (nv *Native[T]) layout(shapes []activation, needBatch []bool) {
	// An alias op's output shares its input's storage: batch-sized if either must be.
	for i := len(nv.ops) - 1; i >= 0; i-- {
		if nv.ops[i].alias() && needBatch[i+1] {
			needBatch[i] = true
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
			perRow += s.n
		}
	}
	perRow += 2 * nv.gradSz
	for _, op := range nv.ops {
		f, x := op.scratchSize()
		perRow += f + x/2
	}
	// Tap rows written and read in the same call count too.
	for _, t := range nv.taps {
		perRow += len(t.In)/nv.batch + len(t.GradZ)/nv.batch
	}
	// A chunk's working set of about 1 MiB stays in a core's L2.
	nv.chunk = max(1, min(nv.batch, (1<<20)/(perRow*sizeOf[T]())))
	// Taps read their layers' input activations: dense taps directly, conv taps by
	// rebuilding patches from them.
	ti := 0
	for k, op := range nv.ops {
		switch o := op.(type) {
		case *convOp[T]:
			if nv.train {
				nv.taps[ti].Patches = nv.patches(o, k)
			}
			ti++
		case *denseOp[T]:
			nv.taps[ti].In = nv.acts[o.in].batch
			ti++
		}
	}
}

// patches is the Patches function of conv op o (the k-th op): the patches of example i
// are still in worker's scratch if its last Forward covered i, else rebuilt from the
// batch-sized input.
func (nv *Native[T]) patches(o *convOp[T], k int) func(worker, i int, buf []T) []T {
	src, size, n := nv.acts[o.in].batch, nv.acts[o.in].size, o.p*o.k
	return func(worker, i int, buf []T) []T {
		if worker >= 0 {
			nv.mu.Lock()
			var sc *nativeScratch[T]
			if worker < len(nv.scratch) {
				sc = nv.scratch[worker]
			}
			nv.mu.Unlock()
			// The worker's scratch is only written by the goroutine now asking.
			if sc != nil && sc.lo <= i && i < sc.hi {
				return sc.floats[k][(i-sc.lo)*n : (i-sc.lo+1)*n]
			}
		}
		o.im2col(src[i*size:(i+1)*size], buf[:n])
		return buf[:n]
	}
}

func sizeOf[T clipping.Float]() int {
	var z T
	if _, ok := any(z).(float32); ok {
		return 4
	}
	return 8
}

// Input is the batch input, [batch × prod(in)], each example CHW (as datasets produce it).
// The caller writes rows before Forward reads them.
func (nv *Native[T]) Input() []T { return nv.acts[0].batch }

// Logits is the network output, [batch × classes], written by Forward.
func (nv *Native[T]) Logits() []T { return nv.acts[len(nv.acts)-1].batch }

// Taps are the parametrised layers' taps (train only), in layer order; Backward writes
// their rows.
func (nv *Native[T]) Taps() []clipping.Tap[T] { return nv.taps }

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
	for k, op := range nv.ops {
		if !op.alias() {
			op.forward(sc, k, nv.rows(sc, k, lo, hi), nv.rows(sc, k+1, lo, hi), hi-lo, lo)
		}
	}
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
		if op.alias() {
			continue
		}
		var gIn []T
		if k > nv.first {
			gIn = sc.grads[which][:n*nv.acts[k].size]
			which ^= 1
		}
		op.backward(sc, k, nv.rows(sc, k, lo, hi), nv.rows(sc, k+1, lo, hi), g, gIn, n, lo)
		g = gIn
	}
}
