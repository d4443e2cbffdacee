package layers

import (
	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
)

// Layer is one stage of a network description. A Layer holds configuration only; Apply may
// be called any number of times (one graph per batch size, per dtype, for training and for
// evaluation), and each call adds fresh nodes to the graph of its input.
//
// Shapes passed to OutputShape and Params are per example (CHW for images, [n] for flat
// vectors); graph nodes carry a leading batch axis.
type Layer interface {
	// Kind names the layer type ("dense", "conv", …). A model numbers the parametrised
	// layers of each kind to name their parameters: "conv1.weight", "dense2.bias".
	Kind() string
	// OutputShape is the per-example output shape for per-example input shape in, or an
	// error saying why in does not fit the layer.
	OutputShape(in []int) ([]int, error)
	// Params describes the layer's parameters for input shape in, in flat order (weight
	// before bias); nil for a layer without parameters. It is only called with shapes
	// OutputShape accepted.
	Params(in []int) []ParamSpec
	// Apply adds the layer to the graph of x, whose shape is [B, in...]. params holds one
	// node per ParamSpec, of shape NodeShape. A layer with parameters returns the Tap its
	// per-example gradients are formed from; a layer without returns a nil Tap.
	Apply(x *G.Node, params []*G.Node) (out *G.Node, tap *Tap, err error)
}

// ParamSpec describes one parameter tensor of a layer.
type ParamSpec struct {
	// Name is the parameter's name within its layer: "weight" or "bias".
	Name string
	// Shape is the tensor's shape in the flat parameter vector (row-major), e.g. a conv
	// weight [F, C, kh, kw] or a bias [F].
	Shape []int
	// NodeShape is the shape of the graph node bound to the same values, when the layer
	// needs another view of them (a conv bias is a [1, F, 1, 1] node to broadcast over
	// NCHW); nil means Shape.
	NodeShape []int
	// Init draws the initial values; FanIn and FanOut are what it scales by.
	Init          Initializer
	FanIn, FanOut int
}

// GraphShape is NodeShape, or Shape when NodeShape is nil.
func (p ParamSpec) GraphShape() []int {
	if p.NodeShape != nil {
		return p.NodeShape
	}
	return p.Shape
}

// Tap names the graph nodes that the per-example gradients of one parametrised layer are
// formed from, and the kind that forms them.
type Tap struct {
	// In is the value the per-example gradient is formed from besides Z's gradient, in
	// Gorgonia's layout: dense, the input A [B, InDim]; conv, the im2col'd input U
	// [B, OH, OW, InDim], the very node Conv2d multiplies by the filter; group norm, the
	// normalised input.
	In *G.Node
	// Z is the output whose gradient the model backpropagates to (the pre-activation).
	Z *G.Node
	// Shape binds In's value and Z's gradient to the layer's clipping.Gradient; its
	// NumParams is the number of parameters the layer has.
	Shape clipping.Shape
	// Nested, when not nil, makes this the tap of a composite layer (Residual): the taps
	// of its parametrised sub-layers, in the order of its parameters; In, Z and Shape are
	// then nil. Engines and tests use Leaves.
	Nested []*Tap
}

// Leaves is the taps an engine binds for t: t itself, or its nested taps (recursively),
// in parameter order. A nil tap has none.
func (t *Tap) Leaves() []*Tap {
	if t == nil {
		return nil
	}
	if t.Nested == nil {
		return []*Tap{t}
	}
	var out []*Tap
	for _, n := range t.Nested {
		out = append(out, n.Leaves()...)
	}
	return out
}

// NumParams is the number of parameters t's leaves cover.
func (t *Tap) NumParams() int {
	n := 0
	for _, l := range t.Leaves() {
		if l.Shape != nil {
			n += l.Shape.NumParams()
		}
	}
	return n
}

// Grouped is a composite layer whose parameters belong to several parametrised
// sub-layers: each has its own tap, and per-layer clipping gives each its own threshold.
// TapGroups names them, in parameter order, for input shape in ("body.0", "shortcut.0").
type Grouped interface {
	Layer
	TapGroups(in []int) []string
}

// Container is a composite layer: Sublayers lists the layers it is built of (for an
// export to find the classes they need).
type Container interface {
	Layer
	Sublayers() []Layer
}
