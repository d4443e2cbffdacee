package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
)

// Conv2D is a 2-D convolution over CHW input with Filters output channels, a bias per
// filter, stride and symmetric zero padding. TF's 'same' padding for an odd total (e.g.
// 8×8/2 on 28×28 needs 3 on each side, which is symmetric) is expressible; an asymmetric
// 'same' is not.
type Conv2D struct {
	Filters int
	Kernel  [2]int // kh, kw
	Stride  [2]int // zero entries mean 1
	// Padding adds Padding[0] zero rows above and below and Padding[1] zero columns left
	// and right.
	Padding [2]int
	NoBias  bool
	// Init draws the weight (the zero value is GlorotUniform); the bias starts at zero.
	Init Initializer
}

// Kind is "conv".
func (Conv2D) Kind() string { return "conv" }

func (l Conv2D) stride() [2]int {
	s := l.Stride
	for i := range s {
		if s[i] == 0 {
			s[i] = 1
		}
	}
	return s
}

// OutputShape is [Filters, OH, OW] with OH = (H + 2·Padding[0] − kh)/stride + 1 (floor).
func (l Conv2D) OutputShape(in []int) ([]int, error) {
	s := l.stride()
	switch {
	case l.Filters <= 0:
		return nil, fmt.Errorf("conv: %d filters", l.Filters)
	case l.Kernel[0] <= 0 || l.Kernel[1] <= 0:
		return nil, fmt.Errorf("conv: kernel %v", l.Kernel)
	case s[0] < 0 || s[1] < 0:
		return nil, fmt.Errorf("conv: stride %v", l.Stride)
	case l.Padding[0] < 0 || l.Padding[1] < 0:
		return nil, fmt.Errorf("conv: padding %v", l.Padding)
	case len(in) != 3 || prod(in) <= 0:
		return nil, fmt.Errorf("conv: input shape %v is not [channels, height, width]", in)
	}
	h, w := in[1]+2*l.Padding[0]-l.Kernel[0], in[2]+2*l.Padding[1]-l.Kernel[1]
	if h < 0 || w < 0 {
		return nil, fmt.Errorf("conv: kernel %v larger than padded input %v", l.Kernel, in)
	}
	return []int{l.Filters, h/s[0] + 1, w/s[1] + 1}, nil
}

// Params is weight [Filters, C, kh, kw], then bias [Filters] (a [1, Filters, 1, 1] node).
// Fan-in and fan-out are C·kh·kw and Filters·kh·kw, as in Keras.
func (l Conv2D) Params(in []int) []ParamSpec {
	rf := l.Kernel[0] * l.Kernel[1]
	fanIn, fanOut := in[0]*rf, l.Filters*rf
	ps := []ParamSpec{{Name: "weight", Shape: []int{l.Filters, in[0], l.Kernel[0], l.Kernel[1]},
		Init: l.Init, FanIn: fanIn, FanOut: fanOut}}
	if !l.NoBias {
		ps = append(ps, ParamSpec{Name: "bias", Shape: []int{l.Filters}, NodeShape: []int{1, l.Filters, 1, 1},
			Init: Zeros, FanIn: fanIn, FanOut: fanOut})
	}
	return ps
}

// Apply adds Gorgonia's Conv2d (im2col, then U·Wᵀ) and the bias broadcast over batch and
// positions. The tap's input is the im2col node itself: asking the graph for Im2Col with
// Conv2d's arguments returns the node Conv2d built, so nothing is computed twice.
func (l Conv2D) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	s := l.stride()
	kernel := tensor.Shape{l.Kernel[0], l.Kernel[1]}
	pad, stride, dilation := []int{l.Padding[0], l.Padding[1]}, []int{s[0], s[1]}, []int{1, 1}
	z, err := G.Conv2d(x, params[0], kernel, pad, stride, dilation)
	if err != nil {
		return nil, nil, fmt.Errorf("conv: %w", err)
	}
	u, err := G.Im2Col(x, kernel, pad, stride, dilation)
	if err != nil {
		return nil, nil, fmt.Errorf("conv im2col: %w", err)
	}
	if !l.NoBias {
		if z, err = G.BroadcastAdd(z, params[1], nil, []byte{0, 2, 3}); err != nil {
			return nil, nil, fmt.Errorf("conv bias: %w", err)
		}
	}
	us := u.Shape()
	tap := &Tap{Kind: clipping.Conv, In: u, Z: z, InDim: us[3], OutDim: l.Filters, Positions: us[1] * us[2], Bias: !l.NoBias}
	return z, tap, nil
}
