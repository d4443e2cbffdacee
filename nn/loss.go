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
// and targets t [B, K] (one-hot rows, zero rows for padding); with focal γ > 0 it is the
// summed focal loss Σ_i −(1 − p_i)^γ·log p_i, p_i = Σ_k t_ik·softmax(z_i)_k (Loss; one-hot
// or zero rows only).
//
// It is a graph op of its own rather than −Σ t ⊙ LogSoftMax(z) because Gorgonia's
// LogSoftMax (tensor v0.9.23) shifts every row by the first row's first logit instead of the
// row's own maximum, so a row whose logits sit far above that value overflows to −Inf; and
// because SoftMax and LogSoftMax of one input merge into one node. Here each row is shifted
// by its own maximum (log-sum-exp), finite for any finite logits.
type softmaxCrossEntropy struct{ focal float64 }

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

func (op softmaxCrossEntropy) Do(vals ...G.Value) (G.Value, error) {
	if len(vals) != 2 {
		return nil, fmt.Errorf("softmax cross-entropy: %d inputs, want 2", len(vals))
	}
	switch z := denseData(vals[0]).(type) {
	case []float64:
		t, k, err := targets[float64](vals, len(z))
		if err != nil {
			return nil, err
		}
		l, err := rowLoss(z, t, k, op.focal)
		return G.NewF64(l), err
	case []float32:
		t, k, err := targets[float32](vals, len(z))
		if err != nil {
			return nil, err
		}
		l, err := rowLoss(z, t, k, op.focal)
		return G.NewF32(float32(l)), err
	}
	return nil, fmt.Errorf("softmax cross-entropy: unsupported logits %T", vals[0])
}

// rowLoss is the summed loss of the op: crossEntropy, or focalLoss for γ > 0.
func rowLoss[T num.Float](z, t []T, k int, focal float64) (float64, error) {
	if focal == 0 {
		return crossEntropy(z, t, k), nil
	}
	return focalLoss(z, t, k, focal)
}

func (softmaxCrossEntropy) ReturnsPtr() bool     { return false }
func (softmaxCrossEntropy) CallsExtern() bool    { return false }
func (softmaxCrossEntropy) OverwritesInput() int { return -1 }
func (op softmaxCrossEntropy) WriteHash(h hash.Hash) {
	fmt.Fprint(h, "privtrain.SoftmaxCrossEntropy", focalSuffix(op.focal))
}
func (op softmaxCrossEntropy) Hashcode() uint32 { return hashOf(op) }
func (op softmaxCrossEntropy) String() string   { return "SoftmaxCrossEntropy" + focalSuffix(op.focal) }

// focalSuffix tells the ops of the focal loss from those of the cross-entropy (γ = 0: "").
func focalSuffix(gamma float64) string {
	if gamma == 0 {
		return ""
	}
	return fmt.Sprintf("(focal γ=%v)", gamma)
}

// DiffWRT: the logits only; targets are data.
func (softmaxCrossEntropy) DiffWRT(int) []bool { return []bool{true, false} }

// SymDiff gives ∂loss/∂z_i = g·(softmax(z_i)·Σ_k t_ik − t_i), g the upstream gradient.
func (op softmaxCrossEntropy) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dz, err := G.ApplyOp(softmaxCrossEntropyGrad(op), inputs[0], inputs[1], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dz, nil}, nil
}

// softmaxCrossEntropyGrad computes the loss gradient at the logits (see SymDiff; for the
// focal loss, w_i times the cross-entropy's: labelFocal).
type softmaxCrossEntropyGrad struct{ focal float64 }

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

func (op softmaxCrossEntropyGrad) Do(vals ...G.Value) (G.Value, error) {
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
		if err := rowGrad(dz, z, t, k, op.focal, g); err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(dz)), nil
	case []float32:
		t, k, err := targets[float32](vals, len(z))
		if err != nil {
			return nil, err
		}
		dz := make([]float32, len(z))
		if err := rowGrad(dz, z, t, k, op.focal, g); err != nil {
			return nil, err
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(dz)), nil
	}
	return nil, fmt.Errorf("softmax cross-entropy gradient: unsupported logits %T", vals[0])
}

// rowGrad writes g·∂rowLoss/∂z into dz.
func rowGrad[T num.Float](dz, z, t []T, k int, focal, g float64) error {
	if focal == 0 {
		crossEntropyGrad(dz, z, t, k, g)
		return nil
	}
	return focalGrad(dz, z, t, k, focal, g)
}

func (softmaxCrossEntropyGrad) ReturnsPtr() bool     { return false }
func (softmaxCrossEntropyGrad) CallsExtern() bool    { return false }
func (softmaxCrossEntropyGrad) OverwritesInput() int { return -1 }
func (op softmaxCrossEntropyGrad) WriteHash(h hash.Hash) {
	fmt.Fprint(h, "privtrain.SoftmaxCrossEntropyGrad", focalSuffix(op.focal))
}
func (op softmaxCrossEntropyGrad) Hashcode() uint32 { return hashOf(op) }
func (op softmaxCrossEntropyGrad) String() string {
	return "SoftmaxCrossEntropyGrad" + focalSuffix(op.focal)
}

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
