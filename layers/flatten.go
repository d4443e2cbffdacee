package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Flatten reshapes each example to a vector, in row-major (CHW) order, the order the
// weights of a following Dense layer are indexed by.
type Flatten struct{}

// Kind is "flatten".
func (Flatten) Kind() string { return "flatten" }

// OutputShape is [prod(in)].
func (Flatten) OutputShape(in []int) ([]int, error) {
	if len(in) == 0 || prod(in) <= 0 {
		return nil, fmt.Errorf("flatten: input shape %v", in)
	}
	return []int{prod(in)}, nil
}

// Params is nil.
func (Flatten) Params([]int) []ParamSpec { return nil }

// Apply reshapes [B, in...] to [B, prod(in)].
func (Flatten) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	s := x.Shape()
	if len(s) == 2 {
		return x, nil, nil
	}
	y, err := G.Reshape(x, tensor.Shape{s[0], prod(s[1:])})
	if err != nil {
		return nil, nil, fmt.Errorf("flatten: %w", err)
	}
	return y, nil, nil
}
