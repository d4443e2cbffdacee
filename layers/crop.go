package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/internal/num"
)

// CenterCrop keeps the central Height×Width window of each channel, as the TF CIFAR-10
// tutorial does to its 32×32 images at evaluation time (offset ⌊(H−Height)/2⌋).
type CenterCrop struct{ Height, Width int }

// Kind is "crop".
func (CenterCrop) Kind() string { return "crop" }

// OutputShape is [C, Height, Width].
func (l CenterCrop) OutputShape(in []int) ([]int, error) {
	if len(in) != 3 || num.Prod(in) <= 0 {
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

func (l CenterCrop) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileCrop[float32], compileCrop[float64])
}

func compileCrop[T num.Float](c *compiler[T], l CenterCrop) error {
	if err := c.image("crop"); err != nil {
		return err
	}
	cur := c.cur
	if _, err := l.OutputShape(shapeOf(cur)); err != nil {
		return err
	}
	op := &cropOp[T]{h: cur.h, w: cur.w, c: cur.c, oh: l.Height, ow: l.Width,
		top: (cur.h - l.Height) / 2, left: (cur.w - l.Width) / 2}
	out := cur
	out.h, out.w, out.n = l.Height, l.Width, l.Height*l.Width*cur.c
	c.add(op, out, false)
	return nil
}

// cropOp is CenterCrop on NHWC images.
type cropOp[T num.Float] struct{ h, w, c, oh, ow, top, left int }

func (o *cropOp[T]) alias() bool             { return false }
func (o *cropOp[T]) prepare()                {}
func (o *cropOp[T]) scratchSize() (int, int) { return 0, 0 }

func (o *cropOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, n, _ int) {
	inN, outN, row := o.h*o.w*o.c, o.oh*o.ow*o.c, o.ow*o.c
	for e := range n {
		for y := range o.oh {
			s := ((y+o.top)*o.w + o.left) * o.c
			copy(out[e*outN+y*row:][:row], in[e*inN+s:][:row])
		}
	}
}

func (o *cropOp[T]) backward(_ *nativeScratch[T], _ int, _, _, gOut, gIn []T, n, _ int) {
	if gIn == nil {
		return
	}
	inN, outN, row := o.h*o.w*o.c, o.oh*o.ow*o.c, o.ow*o.c
	clear(gIn)
	for e := range n {
		for y := range o.oh {
			s := ((y+o.top)*o.w + o.left) * o.c
			copy(gIn[e*inN+s:][:row], gOut[e*outN+y*row:][:row])
		}
	}
}

// cropSettings are a CenterCrop's stored settings: {"height":24,"width":24}.
type cropSettings struct {
	Height int `json:"height"`
	Width  int `json:"width"`
}

func init() {
	registerSettings(func(l CenterCrop) cropSettings {
		return cropSettings{Height: l.Height, Width: l.Width}
	}, func(s cropSettings) (CenterCrop, error) {
		return CenterCrop{Height: s.Height, Width: s.Width}, nil
	})
}

var _ TorchDefiner = CenterCrop{}

// TorchModule is CenterCrop(h, w), the class of TorchDefinition: torch.nn has no crop, and
// torchvision's CenterCrop rounds an odd margin's half to even where ours is floored.
func (l CenterCrop) TorchModule([]int) (string, error) {
	return fmt.Sprintf("CenterCrop(%d, %d)", l.Height, l.Width), nil
}

// TorchDefinition is the crop as a torch.nn.Module: rows ⌊(H−h)/2⌋ … and columns
// ⌊(W−w)/2⌋ … of the input.
func (CenterCrop) TorchDefinition() string { return torchCenterCrop }

const torchCenterCrop = `class CenterCrop(nn.Module):
    """privtrain's layers.CenterCrop: the h×w window at rows (H-h)//2 and columns (W-w)//2."""

    def __init__(self, h, w):
        super().__init__()
        self.h, self.w = h, w

    def extra_repr(self):
        return "h=%d, w=%d" % (self.h, self.w)

    def forward(self, x):
        top, left = (x.shape[-2] - self.h) // 2, (x.shape[-1] - self.w) // 2
        return x[..., top:top + self.h, left:left + self.w]
`
