package nn

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
)

// softmaxCrossEntropy is the summed loss Σ_i Σ_k −t_ik·log softmax(z_i)_k of logits z [B, K]
// and targets t [B, K] (one-hot rows, zero rows for padding).
//
// It is a graph op of its own rather than −Σ t ⊙ LogSoftMax(z) because Gorgonia's
// LogSoftMax (tensor v0.9.23) shifts every row by the first row's first logit instead of the
// row's own maximum, so a row whose logits sit far above that value overflows to −Inf; and
// because SoftMax and LogSoftMax of one input merge into one node. Here each row is shifted
// by its own maximum (log-sum-exp), finite for any finite logits.
type softmaxCrossEntropy struct{}

func matrixType() (hm.TypeVariable, G.TensorType) {
	a := hm.TypeVariable('a')
	return a, G.TensorType{Dims: 2, Of: a}
}

func (softmaxCrossEntropy) Arity() int { return 2 }

func (softmaxCrossEntropy) Type() hm.Type {
	a, m := matrixType()
	return hm.NewFnType(m, m, a)
}

func (softmaxCrossEntropy) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}

func (softmaxCrossEntropy) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("softmax cross-entropy: %d inputs, want 2", len(vals))
	}
	switch z := denseData(vals[0]).(type) {
	case []float64:
		t, k, err := targets[float64](vals, len(z))
		if err != nil {
			return nil, err
		}
		return G.NewF64(crossEntropy(z, t, k)), nil
	case []float32:
		t, k, err := targets[float32](vals, len(z))
		if err != nil {
			return nil, err
		}
		return G.NewF32(float32(crossEntropy(z, t, k))), nil
	}
	return nil, fmt.Errorf("softmax cross-entropy: unsupported logits %T", vals[0])
}

func (softmaxCrossEntropy) ReturnsPtr() bool      { return false }
func (softmaxCrossEntropy) CallsExtern() bool     { return false }
func (softmaxCrossEntropy) OverwritesInput() int  { return -1 }
func (softmaxCrossEntropy) WriteHash(h hash.Hash) { fmt.Fprint(h, "privtrain.SoftmaxCrossEntropy") }
func (op softmaxCrossEntropy) Hashcode() uint32   { return hashOf(op) }
func (softmaxCrossEntropy) String() string        { return "SoftmaxCrossEntropy" }

// DiffWRT: the logits only; targets are data.
func (softmaxCrossEntropy) DiffWRT(int) []bool { return []bool{true, false} }

// SymDiff gives ∂loss/∂z_i = g·(softmax(z_i)·Σ_k t_ik − t_i), g the upstream gradient.
func (softmaxCrossEntropy) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dz, err := G.ApplyOp(softmaxCrossEntropyGrad{}, inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dz, nil}, nil
}

// softmaxCrossEntropyGrad computes the loss gradient at the logits (see SymDiff).
type softmaxCrossEntropyGrad struct{}

func (softmaxCrossEntropyGrad) Arity() int { return 3 }

func (softmaxCrossEntropyGrad) Type() hm.Type {
	a, m := matrixType()
	return hm.NewFnType(m, m, a, m)
}

func (softmaxCrossEntropyGrad) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	if len(in) != 3 {
		return nil, fmt.Errorf("softmax cross-entropy gradient: %d inputs, want 3", len(in))
	}
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("softmax cross-entropy gradient: input shape %v", in[0])
	}
	return s.Clone(), nil
}

func (softmaxCrossEntropyGrad) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 3 {
		return nil, fmt.Errorf("softmax cross-entropy gradient: %d inputs, want 3", len(vals))
	}
	g, err := scalar(vals[2])
	if err != nil {
		return nil, err
	}
	shape := vals[0].Shape().Clone()
	switch z := denseData(vals[0]).(type) {
	case []float64:
		t, k, err := targets[float64](vals, len(z))
		if err != nil {
			return nil, err
		}
		dz := make([]float64, len(z))
		crossEntropyGrad(dz, z, t, k, g)
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(dz)), nil
	case []float32:
		t, k, err := targets[float32](vals, len(z))
		if err != nil {
			return nil, err
		}
		dz := make([]float32, len(z))
		crossEntropyGrad(dz, z, t, k, g)
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(dz)), nil
	}
	return nil, fmt.Errorf("softmax cross-entropy gradient: unsupported logits %T", vals[0])
}

func (softmaxCrossEntropyGrad) ReturnsPtr() bool     { return false }
func (softmaxCrossEntropyGrad) CallsExtern() bool    { return false }
func (softmaxCrossEntropyGrad) OverwritesInput() int { return -1 }
func (softmaxCrossEntropyGrad) WriteHash(h hash.Hash) {
	fmt.Fprint(h, "privtrain.SoftmaxCrossEntropyGrad")
}
func (op softmaxCrossEntropyGrad) Hashcode() uint32 { return hashOf(op) }
func (softmaxCrossEntropyGrad) String() string      { return "SoftmaxCrossEntropyGrad" }

// DiffWRT: the model never differentiates twice; Gorgonia requires SDOp of every op.
func (softmaxCrossEntropyGrad) DiffWRT(n int) []bool { return make([]bool, n) }

func (softmaxCrossEntropyGrad) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("softmax cross-entropy gradient is not differentiable")
}

func hashOf(op G.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// denseData is the contiguous data of a tensor value (materialising a view).
func denseData(v G.Value) any {
	if d, ok := v.(*tensor.Dense); ok && d.IsView() {
		return d.Materialize().Data()
	}
	return v.Data()
}

func targets[T num.Float](vals []G.Value, n int) ([]T, int, error) {
	s := vals[0].Shape()
	if len(s) != 2 || !vals[1].Shape().Eq(s) {
		return nil, 0, fmt.Errorf("softmax cross-entropy: logits %v and targets %v", s, vals[1].Shape())
	}
	t, ok := denseData(vals[1]).([]T)
	if !ok || len(t) != n {
		return nil, 0, fmt.Errorf("softmax cross-entropy: targets of type %T", vals[1].Data())
	}
	return t, s[1], nil
}

func scalar(v G.Value) (float64, error) {
	switch s := v.(type) {
	case *G.F64:
		return float64(*s), nil
	case *G.F32:
		return float64(*s), nil
	case tensor.Tensor:
		switch d := s.Data().(type) {
		case float64:
			return d, nil
		case float32:
			return float64(d), nil
		case []float64:
			if len(d) == 1 {
				return d[0], nil
			}
		case []float32:
			if len(d) == 1 {
				return float64(d[0]), nil
			}
		}
	}
	return 0, fmt.Errorf("softmax cross-entropy gradient: upstream gradient %v is not a scalar", v)
}
