package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// ReLU is max(x, 0), elementwise.
type ReLU struct{}

// Kind is "relu".
func (ReLU) Kind() string { return "relu" }

// OutputShape is in.
func (ReLU) OutputShape(in []int) ([]int, error) { return in, nil }

// Params is nil.
func (ReLU) Params([]int) []ParamSpec { return nil }

// Apply adds Gorgonia's Rectify.
func (ReLU) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	y, err := G.Rectify(x)
	if err != nil {
		return nil, nil, fmt.Errorf("relu: %w", err)
	}
	return y, nil, nil
}

// Tanh is the hyperbolic tangent, elementwise: a bounded ("tempered") activation that
// keeps gradient norms small, which helps under clipping (Papernot et al. 2021).
type Tanh struct{}

// Kind is "tanh".
func (Tanh) Kind() string { return "tanh" }

// OutputShape is in.
func (Tanh) OutputShape(in []int) ([]int, error) { return in, nil }

// Params is nil.
func (Tanh) Params([]int) []ParamSpec { return nil }

// Apply adds Gorgonia's Tanh.
func (Tanh) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	y, err := G.Tanh(x)
	if err != nil {
		return nil, nil, fmt.Errorf("tanh: %w", err)
	}
	return y, nil, nil
}
