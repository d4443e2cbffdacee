package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
)

// Dense is a fully connected layer Z = A·W + b with W of shape [in, Units] (as Keras) and b
// of shape [Units]. Its input must be flat: put a Flatten before it.
type Dense struct {
	Units  int
	NoBias bool
	// Init draws the weight (the zero value is GlorotUniform); the bias starts at zero.
	Init Initializer
}

// Kind is "dense".
func (Dense) Kind() string { return "dense" }

// OutputShape is [Units].
func (l Dense) OutputShape(in []int) ([]int, error) {
	if l.Units <= 0 {
		return nil, fmt.Errorf("dense: %d units", l.Units)
	}
	if len(in) != 1 || in[0] <= 0 {
		return nil, fmt.Errorf("dense: input shape %v is not flat; put a Flatten before it", in)
	}
	return []int{l.Units}, nil
}

// Params is weight [in, Units], then bias [Units].
func (l Dense) Params(in []int) []ParamSpec {
	ps := []ParamSpec{{Name: "weight", Shape: []int{in[0], l.Units}, Init: l.Init, FanIn: in[0], FanOut: l.Units}}
	if !l.NoBias {
		ps = append(ps, ParamSpec{Name: "bias", Shape: []int{l.Units}, NodeShape: []int{1, l.Units},
			Init: Zeros, FanIn: in[0], FanOut: l.Units})
	}
	return ps
}

// Apply computes Z = x·W (+ b broadcast over the batch).
func (l Dense) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	z, err := G.Mul(x, params[0])
	if err != nil {
		return nil, nil, fmt.Errorf("dense: %w", err)
	}
	if !l.NoBias {
		if z, err = G.BroadcastAdd(z, params[1], nil, []byte{0}); err != nil {
			return nil, nil, fmt.Errorf("dense bias: %w", err)
		}
	}
	tap := &Tap{Kind: clipping.Dense, In: x, Z: z, InDim: x.Shape()[1], OutDim: l.Units, Positions: 1, Bias: !l.NoBias}
	return z, tap, nil
}
