package nn

import (
	"fmt"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
)

// net is a Model's Gorgonia graphs and buffers for one element type (EngineGorgonia).
type net[T num.Float] struct {
	m     *Model
	flat  []T // parameter values; every parameter node's tensor is a view into it
	train *graph[T]
	eval  *graph[T]
	ws    *clipping.Workspace[T]
	ran   bool // the training graph has run, so the taps hold a batch
}

// graph is one compiled Gorgonia graph with the buffers its inputs are bound to and its
// outputs are read into. The buffers are allocated once; each run overwrites them.
type graph[T num.Float] struct {
	g      *G.ExprGraph
	vm     G.VM
	x, y   []T      // input batch [B × example] and masked one-hot targets [B × K]
	logits []T      // [B × K]
	loss   *G.Value // summed loss (a scalar)
	// tapIn (evaluation graph) holds the taps' inputs that are not the graph input, in
	// layer order. The training graph cannot read them itself: after Tanh → Flatten the
	// Reshape's value is a view of Tanh's output, which the backward pass then overwrites
	// in place (Tanh's derivative), so a Read there sees garbage.
	tapIn [][]T
}

func dtypeOf[T num.Float]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

func newNet[T num.Float](m *Model, plan []plannedLayer, init []float64) (*net[T], error) {
	n := &net[T]{m: m, flat: make([]T, len(init))}
	num.Convert(n.flat, init)
	var taps []clipping.Gradient[T]
	var err error
	if n.eval, _, err = buildGraph(m, plan, n.flat, false, nil); err != nil {
		return nil, err
	}
	if n.train, taps, err = buildGraph(m, plan, n.flat, true, n.eval.tapIn); err != nil {
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
func readInto[T num.Float](node *G.Node, buf []T) *G.Value {
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
// The training graph takes the taps' inputs from tapIn, the evaluation graph's reads (see
// graph.tapIn): a training step runs the evaluation graph first.
func buildGraph[T num.Float](m *Model, plan []plannedLayer, flat []T, train bool, tapIn [][]T) (*graph[T], []clipping.Gradient[T], error) {
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
			off, size, gs := pl.paramOffs[j], num.Prod(p.Shape), p.GraphShape()
			if num.Prod(gs) != size {
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
		ltaps = append(ltaps, tap.Leaves()...) // a composite layer's taps, one per sub-layer
		h = out
	}
	if s := h.Shape(); len(s) != 2 || s[0] != B || s[1] != K {
		return nil, nil, fmt.Errorf("%w: logits shape %v, want [%d %d]", ErrSpec, h.Shape(), B, K)
	}
	loss, err := G.ApplyOp(softmaxCrossEntropy{focal: m.loss.FocalGamma}, h, y)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: loss: %v", ErrSpec, err)
	}

	var taps []clipping.Gradient[T]
	if !train {
		for _, t := range ltaps {
			if t.In != x {
				buf := make([]T, num.Prod(t.In.Shape()))
				readInto(t.In, buf)
				gr.tapIn = append(gr.tapIn, buf)
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
			if t.In != x {
				in, tapIn = tapIn[0], tapIn[1:]
			}
			gz := make([]T, num.Prod(grads[l].Shape()))
			readInto(grads[l], gz)
			taps = append(taps, clipping.Bind(t.Shape, in, gz))
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

// checkTap makes sure a parametrised layer's tap covers exactly its parameters, so that
// the clipping layout is the flat parameter layout.
func checkTap(pl plannedLayer, tap *layers.Tap) error {
	switch {
	case len(pl.params) == 0 && tap == nil:
		return nil
	case len(pl.params) == 0:
		return fmt.Errorf("%w: %s has a tap but no parameters", ErrSpec, pl.layer.Kind())
	case tap == nil || slices.ContainsFunc(tap.Leaves(), func(t *layers.Tap) bool { return t.Shape == nil }):
		return fmt.Errorf("%w: %s has parameters but no tap: its per-example gradients cannot be clipped", ErrSpec, pl.name)
	}
	n := 0
	for _, p := range pl.params {
		n += num.Prod(p.Shape)
	}
	if got := tap.NumParams(); got != n {
		return fmt.Errorf("%w: %s tap covers %d parameters, the layer has %d", ErrSpec, pl.name, got, n)
	}
	return nil
}

func (n *net[T]) params(dst []float64) { num.Convert(dst, n.flat) }

func (n *net[T]) setParams(src []float64) { num.Convert(n.flat, src) }

// run loads the batch and runs the training or evaluation graph.
func (n *net[T]) run(train bool, b Batch) (float64, int, error) {
	gr := n.eval
	if train {
		gr = n.train
		if len(n.eval.tapIn) > 0 {
			// The taps' inputs come from the evaluation graph (graph.tapIn).
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
