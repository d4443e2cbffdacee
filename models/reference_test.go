package models

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/nn"
)

// referenceGradient is Gorgonia's own answer, built without anything of nn or clipping: a
// fresh float64 graph of spec's layers for the given examples, the loss written as
// −Σ targets ⊙ LogSoftMax(logits) with Gorgonia's ops, and G.Grad with respect to every
// parameter node. It returns the summed loss and the flat gradient in layout order.
func referenceGradient(t *testing.T, spec nn.Spec, params []float64, x []float32, labels []int) (float64, []float64) {
	t.Helper()
	batch := len(labels)
	g := G.NewGraph()
	shape := append([]int{batch}, spec.InputShape...)
	xv := make([]float64, len(x))
	for i, v := range x {
		xv[i] = float64(v)
	}
	h := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(xv))))
	var pnodes G.Nodes
	in := spec.InputShape
	off := 0
	for li, l := range spec.Layers {
		var nodes []*G.Node
		for _, p := range l.Params(in) {
			n := 1
			for _, s := range p.Shape {
				n *= s
			}
			gs := p.GraphShape()
			v := append([]float64(nil), params[off:off+n]...)
			off += n
			node := G.NewTensor(g, tensor.Float64, len(gs), G.WithShape(gs...), G.WithName(p.Name+string(rune('a'+li))),
				G.WithValue(tensor.New(tensor.WithShape(gs...), tensor.WithBacking(v))))
			nodes = append(nodes, node)
			pnodes = append(pnodes, node)
		}
		var err error
		if h, _, err = l.Apply(h, nodes); err != nil {
			t.Fatal(err)
		}
		if in, err = l.OutputShape(in); err != nil {
			t.Fatal(err)
		}
	}
	if off != len(params) {
		t.Fatalf("reference used %d of %d parameters", off, len(params))
	}
	onehot := make([]float64, batch*spec.NumClasses)
	for i, lab := range labels {
		onehot[i*spec.NumClasses+lab] = 1
	}
	y := G.NewMatrix(g, tensor.Float64, G.WithShape(batch, spec.NumClasses), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(batch, spec.NumClasses), tensor.WithBacking(onehot))))
	lsm := G.Must(G.LogSoftMax(h))
	loss := G.Must(G.Neg(G.Must(G.Sum(G.Must(G.HadamardProd(y, lsm))))))
	if _, err := G.Grad(loss, pnodes...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	var grad []float64
	for _, n := range pnodes {
		gv, err := n.Grad()
		if err != nil {
			t.Fatal(err)
		}
		grad = append(grad, gv.Data().([]float64)...)
	}
	return loss.Value().Data().(float64), grad
}
