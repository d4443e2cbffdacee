package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaxPool2D takes the maximum over Kernel-sized windows of each channel.
//
// Padding is symmetric by construction: Gorgonia's MaxPool2D gives wrong values with its
// 4-element (asymmetric) padding (see gorgonia-notes.md), so this type cannot express it.
// Padded cells never win the maximum (they act as −∞, not 0), which matters after Tanh.
type MaxPool2D struct {
	Kernel [2]int
	Stride [2]int // zero entries mean the kernel size (Keras and PyTorch default)
	// Padding extends each side by Padding[0] rows and Padding[1] columns; at most half
	// the kernel, so every window holds a real cell.
	Padding [2]int
}

// Kind is "maxpool".
func (MaxPool2D) Kind() string { return "maxpool" }

func (l MaxPool2D) stride() [2]int {
	s := l.Stride
	for i := range s {
		if s[i] == 0 {
			s[i] = l.Kernel[i]
		}
	}
	return s
}

// OutputShape is [C, OH, OW] with OH = (H + 2·Padding[0] − kh)/stride + 1 (floor).
func (l MaxPool2D) OutputShape(in []int) ([]int, error) {
	s := l.stride()
	switch {
	case l.Kernel[0] <= 0 || l.Kernel[1] <= 0:
		return nil, fmt.Errorf("maxpool: kernel %v", l.Kernel)
	case s[0] <= 0 || s[1] <= 0:
		return nil, fmt.Errorf("maxpool: stride %v", l.Stride)
	case l.Padding[0] < 0 || l.Padding[1] < 0 || 2*l.Padding[0] > l.Kernel[0] || 2*l.Padding[1] > l.Kernel[1]:
		return nil, fmt.Errorf("maxpool: padding %v must be between 0 and half the kernel %v", l.Padding, l.Kernel)
	case len(in) != 3 || prod(in) <= 0:
		return nil, fmt.Errorf("maxpool: input shape %v is not [channels, height, width]", in)
	}
	h, w := in[1]+2*l.Padding[0]-l.Kernel[0], in[2]+2*l.Padding[1]-l.Kernel[1]
	if h < 0 || w < 0 {
		return nil, fmt.Errorf("maxpool: kernel %v larger than padded input %v", l.Kernel, in)
	}
	return []int{in[0], h/s[0] + 1, w/s[1] + 1}, nil
}

// Params is nil.
func (MaxPool2D) Params([]int) []ParamSpec { return nil }

// Apply adds Gorgonia's MaxPool2D with 2-element (symmetric) padding.
func (l MaxPool2D) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	s := l.stride()
	y, err := G.MaxPool2D(x, tensor.Shape{l.Kernel[0], l.Kernel[1]}, []int{l.Padding[0], l.Padding[1]}, []int{s[0], s[1]})
	if err != nil {
		return nil, nil, fmt.Errorf("maxpool: %w", err)
	}
	return y, nil, nil
}
