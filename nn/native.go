package nn

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/parallel"
	"github.com/privtrain/privtrain/layers"
)

// nativeNet is a Model on the native engine (layers.Native): a training program with taps
// and a forward-only program for evaluation, sharing the parameter vector. A step is one
// parallel pass over chunks of rows: each chunk is loaded, run forward, its loss and the
// gradient at the logits formed, run backward to the taps and clipped while it is still in
// cache (clipping.Workspace.ClippedSumFill drives the chunks).
type nativeNet[T num.Float] struct {
	m           *Model
	flat        []T
	train, eval *layers.Native[T]
	ws          *clipping.Workspace[T]
	ran         bool
	// trainReady and evalReady say the program has re-read flat since setParams last
	// wrote it: a logical batch runs in many physical calls on the same parameters.
	trainReady, evalReady bool

	// State of the current call, indexed by row or by worker.
	batch    Batch
	rowLoss  []float64
	rowRight []bool
	mu       sync.Mutex
	gradBufs [][]T // per worker: the gradient at the logits of one chunk
	errs     []error
}

// newNativeNet compiles plan on m.inputShape; with skip > 0 its first skip layers are
// left to the front end (frontEnd.absorb) and the programs take their output as input.
func newNativeNet[T num.Float](m *Model, plan []plannedLayer, init []float64, skip int) (*nativeNet[T], error) {
	n := &nativeNet[T]{m: m, flat: make([]T, len(init)), rowLoss: make([]float64, m.batch), rowRight: make([]bool, m.batch)}
	num.Convert(n.flat, init)
	ls := make([]layers.Layer, len(plan))
	views := make([][][]T, len(plan))
	for i, pl := range plan {
		ls[i] = pl.layer
		for j, p := range pl.params {
			off := pl.paramOffs[j]
			views[i] = append(views[i], n.flat[off:off+num.Prod(p.Shape)])
		}
	}
	var err error
	if n.train, err = layers.NewNativeAfter(ls, m.inputShape, m.batch, views, true, skip); err != nil {
		return nil, wrapNative(err)
	}
	if n.eval, err = layers.NewNativeAfter(ls, m.inputShape, m.batch, views, false, skip); err != nil {
		return nil, wrapNative(err)
	}
	if n.ws, err = clipping.NewWorkspace(n.train.Taps(), m.batch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if n.ws.NumParams() != m.numParams {
		return nil, fmt.Errorf("%w: taps cover %d parameters of %d", ErrSpec, n.ws.NumParams(), m.numParams)
	}
	// Each chunk's clipped sum reads and writes the whole partial gradient (d values). With
	// Native's chunk of a few rows (the CIFAR-10 CNN: 4, its patches fill the cache) that
	// streaming dominates a step (the 885k-weight Dense's low-rank updates), so clip at
	// least d/64k rows at once, at most 16: fill runs Native in pieces of its own chunk, and
	// patches not left in cache are rebuilt. Measured at batch 128 (CPU s per 1,000
	// examples): CIFAR-10 CNN 3.0–3.2 → 2.2–2.4 with Native's chunk at 1 row, 2.07–2.13 →
	// 1.91–1.99 with it at 4; the MNIST CNN (d = 26k) keeps Native's chunk (6).
	n.ws.SetChunkRows(max(n.train.Chunk(), min(16, (m.numParams+1<<16-1)>>16)))
	return n, nil
}

func wrapNative(err error) error {
	if errors.Is(err, layers.ErrNotNative) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrSpec, err)
}

func (n *nativeNet[T]) params(dst []float64) { num.Convert(dst, n.flat) }

func (n *nativeNet[T]) setParams(src []float64) {
	num.Convert(n.flat, src)
	n.trainReady, n.evalReady = false, false
}

// prepare re-reads the parameters into the program's packed copies if they changed.
func prepare[T num.Float](nv *layers.Native[T], ready *bool) {
	if !*ready {
		nv.Prepare()
		*ready = true
	}
}

func (n *nativeNet[T]) gradBuf(worker int) []T {
	n.mu.Lock()
	defer n.mu.Unlock()
	for len(n.gradBufs) <= worker {
		n.gradBufs = append(n.gradBufs, make([]T, n.train.Chunk()*n.m.numClasses))
	}
	return n.gradBufs[worker]
}

// begin validates b and resets the per-row results.
func (n *nativeNet[T]) begin(b Batch) error {
	if err := checkBatch(b, n.m.batch, n.m.exampleLen); err != nil {
		return err
	}
	n.batch = b
	clear(n.rowLoss)
	clear(n.rowRight)
	return nil
}

// finish sums the per-row results in row order (the same sum whatever the schedule).
func (n *nativeNet[T]) finish() (float64, int) {
	var loss float64
	correct := 0
	for i, l := range n.rowLoss {
		loss += l
		if n.rowRight[i] {
			correct++
		}
	}
	n.batch = Batch{}
	return loss, correct
}

// read has nv read the current batch: in place when its values are nv's type (float32),
// the caller's rows then being only checked by load; else load copies them into Input.
func (n *nativeNet[T]) read(nv *layers.Native[T]) {
	if x, ok := any(n.batch.X).([]T); ok {
		nv.ReadInput(x)
	}
}

// load checks rows lo…hi−1 of the current batch where nv reads them in place (read), or
// copies them into nv's input.
func (n *nativeNet[T]) load(nv *layers.Native[T], lo, hi int) error {
	L, K := n.m.exampleLen, n.m.numClasses
	if _, ok := any(n.batch.X).([]T); ok {
		for i := lo; i < hi; i++ {
			if err := checkRow(n.batch, i, L, K); err != nil {
				return err
			}
		}
		return nil
	}
	in := nv.Input()
	for i := lo; i < hi; i++ {
		if _, err := loadRow(n.batch, i, L, K, in[i*L:(i+1)*L]); err != nil {
			return err
		}
	}
	return nil
}

// score records the loss and correctness of rows lo…hi−1 from the logits and, with grad,
// writes the loss gradient at those logits (zero for padding rows).
func (n *nativeNet[T]) score(nv *layers.Native[T], lo, hi int, grad []T) {
	K := n.m.numClasses
	logits := nv.Logits()
	b := n.batch
	for i := lo; i < hi; i++ {
		z := logits[i*K : (i+1)*K]
		var dz []T
		if grad != nil {
			dz = grad[(i-lo)*K : (i-lo+1)*K]
		}
		if b.Labels == nil || (b.Mask != nil && !b.Mask[i]) {
			clear(dz)
			continue
		}
		if g := n.m.loss.FocalGamma; g != 0 {
			n.rowLoss[i] = labelFocal(z, b.Labels[i], g, dz)
		} else {
			n.rowLoss[i] = labelCrossEntropy(z, b.Labels[i], dz)
		}
		n.rowRight[i] = argmax(z) == b.Labels[i]
	}
}

// fill is the training pass over rows lo…hi−1: the clipping workspace calls it chunk by
// chunk, concurrently for disjoint chunks. A range may hold padding rows besides a chunk
// of real ones, so it is run in pieces of at most the program's chunk.
func (n *nativeNet[T]) fill(worker, lo, hi int) error {
	g := n.gradBuf(worker)
	for a := lo; a < hi; a += n.train.Chunk() {
		b := min(a+n.train.Chunk(), hi)
		if err := n.load(n.train, a, b); err != nil {
			return err
		}
		n.train.Forward(worker, a, b)
		n.score(n.train, a, b, g)
		n.train.Backward(worker, a, b, g)
	}
	return nil
}

func (n *nativeNet[T]) clippedStep(b Batch, rule clipping.Rule, dst []float64) (float64, int, clipping.Stats, error) {
	if err := n.begin(b); err != nil {
		return 0, 0, clipping.Stats{}, err
	}
	prepare(n.train, &n.trainReady)
	n.read(n.train)
	st, err := n.ws.ClippedSumFill(b.Mask, rule, dst, n.fill)
	loss, correct := n.finish()
	if err != nil {
		if errors.Is(err, ErrBatch) {
			return 0, 0, clipping.Stats{}, err
		}
		return 0, 0, clipping.Stats{}, fmt.Errorf("nn: %w", err)
	}
	n.ran = true
	return loss, correct, st, nil
}

func (n *nativeNet[T]) sumStep(b Batch, dst []float64) (float64, int, error) {
	if err := n.begin(b); err != nil {
		return 0, 0, err
	}
	prepare(n.train, &n.trainReady)
	n.read(n.train)
	err := n.ws.SumFill(b.Mask, dst, n.fill)
	loss, correct := n.finish()
	if err != nil {
		if errors.Is(err, ErrBatch) {
			return 0, 0, err
		}
		return 0, 0, fmt.Errorf("nn: %w", err)
	}
	n.ran = true
	return loss, correct, nil
}

func (n *nativeNet[T]) evaluate(b Batch) (float64, int, error) {
	if err := n.begin(b); err != nil {
		return 0, 0, err
	}
	prepare(n.eval, &n.evalReady)
	n.read(n.eval)
	chunk := n.eval.Chunk()
	chunks := (n.m.batch + chunk - 1) / chunk
	if len(n.errs) < chunks {
		n.errs = make([]error, chunks)
	}
	parallel.For(runtime.GOMAXPROCS(0), n.m.batch, chunk, func(worker, lo, hi int) {
		err := n.load(n.eval, lo, hi)
		n.errs[lo/chunk] = err
		if err != nil {
			return
		}
		n.eval.Forward(worker, lo, hi)
		n.score(n.eval, lo, hi, nil)
	})
	loss, correct := n.finish()
	for _, err := range n.errs[:chunks] {
		if err != nil {
			return 0, 0, err
		}
	}
	return loss, correct, nil
}

func (n *nativeNet[T]) perExample(i int, dst []float64) error { return n.ws.PerExample(i, dst) }

func (n *nativeNet[T]) stepped() bool { return n.ran }

func (n *nativeNet[T]) predictions(dst []int) {
	K := n.m.numClasses
	logits := n.eval.Logits()
	for i := range dst {
		dst[i] = argmax(logits[i*K : (i+1)*K])
	}
}
