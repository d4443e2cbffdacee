package nn

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/parallel"
	"github.com/privtrain/privtrain/layers"
)

// net is a Model's Gorgonia graphs and buffers for one element type (EngineGorgonia).
type net[T clipping.Float] struct {
	m     *Model
	flat  []T // parameter values; every parameter node's tensor is a view into it
	train *graph[T]
	eval  *graph[T]
	ws    *clipping.Workspace[T]
	ran   bool // the training graph has run, so the taps hold a batch
}

// graph is one compiled Gorgonia graph with the buffers its inputs are bound to and its
// outputs are read into. The buffers are allocated once; each run overwrites them.
type graph[T clipping.Float] struct {
	g      *G.ExprGraph
	vm     G.VM
	x, y   []T      // input batch [B × example] and masked one-hot targets [B × K]
	logits []T      // [B × K]
	loss   *G.Value // summed loss (a scalar)
	// denseIn (evaluation graph) holds the inputs of the dense layers that do not read
	// the graph input, in layer order. The training graph cannot read them itself: after
	// Tanh → Flatten the Reshape's value is a view of Tanh's output, which the backward
	// pass then overwrites in place (Tanh's derivative), so a Read there sees garbage.
	denseIn [][]T
}

func dtypeOf[T clipping.Float]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

// convert copies src into dst (of the same length), converting between float32 and float64.
func convert[D, S clipping.Float](dst []D, src []S) {
	for j, v := range src {
		dst[j] = D(v)
	}
}

func newNet[T clipping.Float](m *Model, plan []plannedLayer, init []float64) (*net[T], error) {
	n := &net[T]{m: m, flat: make([]T, len(init))}
	convert(n.flat, init)
	var taps []clipping.Tap[T]
	var err error
	if n.eval, _, err = buildGraph(m, plan, n.flat, false, nil); err != nil {
		return nil, err
	}
	if n.train, taps, err = buildGraph(m, plan, n.flat, true, n.eval.denseIn); err != nil {
		return nil, err
	}
	if n.ws, err = clipping.NewWorkspace(taps, m.batch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if n.ws.NumParams() != m.numParams {
		return nil, fmt.Errorf("%w: taps cover %d parameters of %d", ErrSpec, n.ws.NumParams(), m.numParams)
	}
	return n, nil
}

// readInto makes the graph copy node's value into buf each run. Reading through the graph
// (not node.Value() afterwards) matters: the tape machine may reuse a dead node's register
// for a later op, and the read keeps the value live until it is copied.
func readInto[T clipping.Float](node *G.Node, buf []T) *G.Value {
	v := new(G.Value)
	*v = tensor.New(tensor.WithShape(node.Shape().Clone()...), tensor.WithBacking(buf))
	G.Read(node, v)
	return v
}

// buildGraph adds input → layers → logits → summed loss; with train, also ONE
// backpropagation of the summed loss to every parametrised layer's pre-activation Z and
// reads of the taps. Gorgonia caches derivatives on nodes, so a second Backpropagate on
// the same graph would silently return the first gradients: everything the step needs
// comes from this single call.
//
// The training graph takes the inputs of dense layers from denseIn, the evaluation graph's
// reads (see graph.denseIn): a training step runs the evaluation graph first.
func buildGraph[T clipping.Float](m *Model, plan []plannedLayer, flat []T, train bool, denseIn [][]T) (*graph[T], []clipping.Tap[T], error) {
	dt := dtypeOf[T]()
	B, K := m.batch, m.numClasses
	g := G.NewGraph()
	gr := &graph[T]{g: g, x: make([]T, B*m.exampleLen), y: make([]T, B*K), logits: make([]T, B*K)}
	xShape := append([]int{B}, m.inputShape...)
	x := G.NewTensor(g, dt, len(xShape), G.WithShape(xShape...), G.WithName("input"),
		G.WithValue(tensor.New(tensor.WithShape(xShape...), tensor.WithBacking(gr.x))))
	y := G.NewMatrix(g, dt, G.WithShape(B, K), G.WithName("targets"),
		G.WithValue(tensor.New(tensor.WithShape(B, K), tensor.WithBacking(gr.y))))

	h := x
	var ltaps []*layers.Tap
	for i, pl := range plan {
		nodes := make([]*G.Node, len(pl.params))
		for j, p := range pl.params {
			off, size, gs := pl.paramOffs[j], prodInts(p.Shape), p.GraphShape()
			if prodInts(gs) != size {
				return nil, nil, fmt.Errorf("%w: %s.%s node shape %v does not hold shape %v", ErrSpec, pl.name, p.Name, gs, p.Shape)
			}
			view := tensor.New(tensor.WithShape(gs...), tensor.WithBacking(flat[off:off+size]))
			nodes[j] = G.NewTensor(g, dt, len(gs), G.WithShape(gs...), G.WithName(pl.name+"."+p.Name), G.WithValue(view))
		}
		out, tap, err := pl.layer.Apply(h, nodes)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: layer %d (%s): %v", ErrSpec, i, pl.layer.Kind(), err)
		}
		if s := out.Shape(); s[0] != B || !slices.Equal([]int(s[1:]), pl.out) {
			return nil, nil, fmt.Errorf("%w: layer %d (%s) output %v, want [%d %v]", ErrSpec, i, pl.layer.Kind(), s, B, pl.out)
		}
		if err := checkTap(pl, tap); err != nil {
			return nil, nil, err
		}
		if tap != nil {
			ltaps = append(ltaps, tap)
		}
		h = out
	}
	if s := h.Shape(); len(s) != 2 || s[0] != B || s[1] != K {
		return nil, nil, fmt.Errorf("%w: logits shape %v, want [%d %d]", ErrSpec, h.Shape(), B, K)
	}
	loss, err := G.ApplyOp(softmaxCrossEntropy{}, h, y)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: loss: %v", ErrSpec, err)
	}

	var taps []clipping.Tap[T]
	if !train {
		for _, t := range ltaps {
			if t.Kind == clipping.Dense && t.In != x {
				buf := make([]T, prodInts(t.In.Shape()))
				readInto(t.In, buf)
				gr.denseIn = append(gr.denseIn, buf)
			}
		}
	}
	if train {
		zs := make(G.Nodes, len(ltaps))
		for l, t := range ltaps {
			zs[l] = t.Z
		}
		one := g.AddNode(G.NewConstant(T(1)))
		grads, err := G.Backpropagate(G.Nodes{loss}, G.Nodes{one}, zs)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: backpropagation: %v", ErrSpec, err)
		}
		for l, t := range ltaps {
			in := gr.x
			switch {
			case t.In == x:
			case t.Kind == clipping.Dense:
				in, denseIn = denseIn[0], denseIn[1:]
			default:
				in = make([]T, prodInts(t.In.Shape()))
				readInto(t.In, in)
			}
			gz := make([]T, prodInts(grads[l].Shape()))
			readInto(grads[l], gz)
			taps = append(taps, clipping.Tap[T]{Kind: t.Kind, In: in, GradZ: gz,
				InDim: t.InDim, OutDim: t.OutDim, Positions: t.Positions, Bias: t.Bias})
		}
	}
	readInto(h, gr.logits)
	gr.loss = new(G.Value)
	G.Read(loss, gr.loss)

	prog, locMap, err := G.Compile(g)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: compile: %v", ErrSpec, err)
	}
	gr.vm = G.NewTapeMachine(g, G.WithPrecompiled(prog, locMap))
	return gr, taps, nil
}

// checkTap makes sure a parametrised layer's tap covers exactly its parameters, weight
// then bias, so that the clipping layout is the flat parameter layout.
func checkTap(pl plannedLayer, tap *layers.Tap) error {
	switch {
	case len(pl.params) == 0 && tap == nil:
		return nil
	case len(pl.params) == 0:
		return fmt.Errorf("%w: %s has a tap but no parameters", ErrSpec, pl.layer.Kind())
	case tap == nil:
		return fmt.Errorf("%w: %s has parameters but no tap: its per-example gradients cannot be clipped", ErrSpec, pl.name)
	}
	want := 1
	if tap.Bias {
		want = 2
	}
	ok := len(pl.params) == want && prodInts(pl.params[0].Shape) == tap.InDim*tap.OutDim
	if ok && tap.Bias {
		ok = prodInts(pl.params[1].Shape) == tap.OutDim
	}
	if !ok {
		return fmt.Errorf("%w: %s tap (%d×%d, bias %v) does not match its parameters", ErrSpec, pl.name, tap.InDim, tap.OutDim, tap.Bias)
	}
	return nil
}

func (n *net[T]) params(dst []float64) { convert(dst, n.flat) }

func (n *net[T]) setParams(src []float64) { convert(n.flat, src) }

// run loads the batch and runs the training or evaluation graph.
func (n *net[T]) run(train bool, b Batch) (float64, int, error) {
	gr := n.eval
	if train {
		gr = n.train
		if len(n.eval.denseIn) > 0 {
			// The dense layers' inputs come from the evaluation graph (graph.denseIn).
			if _, _, err := n.run(false, b); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := n.load(gr, b); err != nil {
		return 0, 0, err
	}
	gr.vm.Reset() // RunAll without Reset silently does nothing
	if err := gr.vm.RunAll(); err != nil {
		return 0, 0, fmt.Errorf("nn: running %s graph: %w", map[bool]string{true: "training", false: "evaluation"}[train], err)
	}
	if train {
		n.ran = true
	}
	loss, err := scalar(*gr.loss)
	if err != nil {
		return 0, 0, err
	}
	correct := 0
	if b.Labels != nil {
		K := n.m.numClasses
		for i, lab := range b.Labels {
			if (b.Mask == nil || b.Mask[i]) && argmax(gr.logits[i*K:(i+1)*K]) == lab {
				correct++
			}
		}
	}
	return loss, correct, nil
}

// load validates b and writes it into the graph's input and target buffers. Padding rows
// get zero input and zero targets, so their loss and every gradient at them are exactly 0.
func (n *net[T]) load(gr *graph[T], b Batch) error {
	B, L, K := n.m.batch, n.m.exampleLen, n.m.numClasses
	if err := checkBatch(b, B, L); err != nil {
		return err
	}
	for i := range B {
		yrow := gr.y[i*K : (i+1)*K]
		clear(yrow)
		if _, err := loadRow(b, i, L, K, gr.x[i*L:(i+1)*L]); err != nil {
			return err
		}
		if b.Labels != nil && (b.Mask == nil || b.Mask[i]) {
			yrow[b.Labels[i]] = 1
		}
	}
	return nil
}

// checkBatch checks the lengths of b's slices for batch size B and example length L.
func checkBatch(b Batch, B, L int) error {
	switch {
	case len(b.X) != B*L:
		return fmt.Errorf("%w: %d input values, want %d examples × %d", ErrBatch, len(b.X), B, L)
	case b.Labels != nil && len(b.Labels) != B:
		return fmt.Errorf("%w: %d labels for batch size %d", ErrBatch, len(b.Labels), B)
	case b.Mask != nil && len(b.Mask) != B:
		return fmt.Errorf("%w: mask of %d rows for batch size %d", ErrBatch, len(b.Mask), B)
	}
	return nil
}

// loadRow writes example i of b into row (zeros for a padding row) and says whether it is
// real; it checks the values are finite and the label (if any) is one of K classes.
func loadRow[T clipping.Float](b Batch, i, L, K int, row []T) (bool, error) {
	if b.Mask != nil && !b.Mask[i] {
		clear(row)
		return false, nil
	}
	src := b.X[i*L : (i+1)*L]
	var probe float32
	for j, v := range src {
		row[j] = T(v)
		probe += v * 0 // NaN or ±Inf make it NaN
	}
	if probe != 0 {
		for j, v := range src {
			if v != v || math.IsInf(float64(v), 0) {
				return false, fmt.Errorf("%w: example %d value %d is %v", ErrBatch, i, j, v)
			}
		}
	}
	if b.Labels != nil {
		if lab := b.Labels[i]; lab < 0 || lab >= K {
			return false, fmt.Errorf("%w: example %d has label %d, want 0…%d", ErrBatch, i, lab, K-1)
		}
	}
	return true, nil
}

func (n *net[T]) clippedStep(b Batch, rule clipping.Rule, dst []float64) (float64, int, clipping.Stats, error) {
	loss, correct, err := n.run(true, b)
	if err != nil {
		return 0, 0, clipping.Stats{}, err
	}
	st, err := n.ws.ClippedSum(b.Mask, rule, dst)
	if err != nil {
		return 0, 0, clipping.Stats{}, fmt.Errorf("nn: %w", err)
	}
	return loss, correct, st, nil
}

func (n *net[T]) sumStep(b Batch, dst []float64) (float64, int, error) {
	loss, correct, err := n.run(true, b)
	if err != nil {
		return 0, 0, err
	}
	if err := n.ws.Sum(b.Mask, dst); err != nil {
		return 0, 0, fmt.Errorf("nn: %w", err)
	}
	return loss, correct, nil
}

func (n *net[T]) evaluate(b Batch) (float64, int, error) { return n.run(false, b) }

func (n *net[T]) perExample(i int, dst []float64) error { return n.ws.PerExample(i, dst) }

func (n *net[T]) stepped() bool { return n.ran }

func (n *net[T]) predictions(dst []int) {
	K := n.m.numClasses
	for i := range dst {
		dst[i] = argmax(n.eval.logits[i*K : (i+1)*K])
	}
}

// argmax is the first index of the largest value.
func argmax[T clipping.Float](v []T) int {
	best := 0
	for j := 1; j < len(v); j++ {
		if v[j] > v[best] {
			best = j
		}
	}
	return best
}

// nativeNet is a Model on the native engine (layers.Native): a training program with taps
// and a forward-only program for evaluation, sharing the parameter vector. A step is one
// parallel pass over chunks of rows: each chunk is loaded, run forward, its loss and the
// gradient at the logits formed, run backward to the taps and clipped while it is still in
// cache (clipping.Workspace.ClippedSumFill drives the chunks).
type nativeNet[T clipping.Float] struct {
	m           *Model
	flat        []T
	train, eval *layers.Native[T]
	ws          *clipping.Workspace[T]
	ran         bool

	// State of the current call, indexed by row or by worker.
	batch    Batch
	rowLoss  []float64
	rowRight []bool
	mu       sync.Mutex
	gradBufs [][]T // per worker: the gradient at the logits of one chunk
	errs     []error
}

func newNativeNet[T clipping.Float](m *Model, plan []plannedLayer, init []float64) (*nativeNet[T], error) {
	n := &nativeNet[T]{m: m, flat: make([]T, len(init)), rowLoss: make([]float64, m.batch), rowRight: make([]bool, m.batch)}
	convert(n.flat, init)
	ls := make([]layers.Layer, len(plan))
	views := make([][][]T, len(plan))
	for i, pl := range plan {
		ls[i] = pl.layer
		for j, p := range pl.params {
			off := pl.paramOffs[j]
			views[i] = append(views[i], n.flat[off:off+prodInts(p.Shape)])
		}
	}
	var err error
	if n.train, err = layers.NewNative(ls, m.inputShape, m.batch, views, true); err != nil {
		return nil, wrapNative(err)
	}
	if n.eval, err = layers.NewNative(ls, m.inputShape, m.batch, views, false); err != nil {
		return nil, wrapNative(err)
	}
	if n.ws, err = clipping.NewWorkspace(n.train.Taps(), m.batch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if n.ws.NumParams() != m.numParams {
		return nil, fmt.Errorf("%w: taps cover %d parameters of %d", ErrSpec, n.ws.NumParams(), m.numParams)
	}
	n.ws.SetChunkRows(n.train.Chunk())
	return n, nil
}

func wrapNative(err error) error {
	if errors.Is(err, layers.ErrNotNative) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrSpec, err)
}

func (n *nativeNet[T]) params(dst []float64) { convert(dst, n.flat) }

func (n *nativeNet[T]) setParams(src []float64) { convert(n.flat, src) }

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

// load copies rows lo…hi−1 of the current batch into nv's input.
func (n *nativeNet[T]) load(nv *layers.Native[T], lo, hi int) error {
	L, K := n.m.exampleLen, n.m.numClasses
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
		n.rowLoss[i] = labelCrossEntropy(z, b.Labels[i], dz)
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
	n.train.Prepare()
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
	n.train.Prepare()
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
	n.eval.Prepare()
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
