package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// CenterCrop keeps the central Height×Width window of each channel, as the TF CIFAR-10
// tutorial does to its 32×32 images at evaluation time (offset ⌊(H−Height)/2⌋).
type CenterCrop struct{ Height, Width int }

// Kind is "crop".
func (CenterCrop) Kind() string { return "crop" }

// OutputShape is [C, Height, Width].
func (l CenterCrop) OutputShape(in []int) ([]int, error) {
	if len(in) != 3 || prod(in) <= 0 {
		return nil, fmt.Errorf("crop: input shape %v is not [channels, height, width]", in)
	}
	if l.Height <= 0 || l.Width <= 0 || l.Height > in[1] || l.Width > in[2] {
		return nil, fmt.Errorf("crop: %d×%d window does not fit input %v", l.Height, l.Width, in)
	}
	return []int{in[0], l.Height, l.Width}, nil
}

// Params is nil.
func (CenterCrop) Params([]int) []ParamSpec { return nil }

// Apply slices rows and columns of x.
func (l CenterCrop) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	s := x.Shape()
	top, left := (s[2]-l.Height)/2, (s[3]-l.Width)/2
	y, err := G.Slice(x, nil, nil, G.S(top, top+l.Height), G.S(left, left+l.Width))
	if err != nil {
		return nil, nil, fmt.Errorf("crop: %w", err)
	}
	return y, nil, nil
}
