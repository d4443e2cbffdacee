package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
)

// AvgPool2D averages Kernel-sized windows of each channel. Padded cells are left out of
// the mean (PyTorch's count_include_pad=False): a window of k real cells is their sum / k.
type AvgPool2D struct {
	Kernel [2]int
	Stride [2]int // zero entries mean the kernel size (Keras and PyTorch default)
	// Padding extends each side by Padding[0] rows and Padding[1] columns; at most half
	// the kernel, so every window holds a real cell.
	Padding [2]int
}

// Kind is "avgpool".
func (AvgPool2D) Kind() string { return "avgpool" }

// OutputShape is [C, OH, OW] with OH = (H + 2·Padding[0] − kh)/stride + 1 (floor).
func (l AvgPool2D) OutputShape(in []int) ([]int, error) {
	return poolShape("avgpool", l.Kernel, l.Stride, l.Padding, in)
}

// Params is nil.
func (AvgPool2D) Params([]int) []ParamSpec { return nil }

// Apply sums each channel's windows with a Conv2d by a fixed [C, C, kh, kw] filter (ones
// from a channel to itself, zero padding adds nothing) and multiplies by 1/(real cells
// per window), a constant.
func (l AvgPool2D) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	s := x.Shape()
	if len(s) != 4 {
		return nil, nil, fmt.Errorf("avgpool: input %v is not [B, C, H, W]", s)
	}
	out, err := l.OutputShape([]int(s[1:]))
	if err != nil {
		return nil, nil, err
	}
	b, c, kh, kw := s[0], s[1], l.Kernel[0], l.Kernel[1]
	st := poolStride(l.Kernel, l.Stride)
	filter := make([]float64, c*c*kh*kw)
	for ch := range c {
		for j := range kh * kw {
			filter[(ch*c+ch)*kh*kw+j] = 1
		}
	}
	_, start := poolWindows(activation{h: s[2], w: s[3], c: 1}, out[1], out[2], l.Kernel, st, l.Padding)
	scale := make([]float64, b*c*out[1]*out[2])
	p := out[1] * out[2]
	for j := range scale {
		q := j % p
		scale[j] = 1 / float64(start[q+1]-start[q])
	}
	constant := func(shape tensor.Shape, v []float64) *G.Node {
		var t tensor.Tensor
		if x.Dtype() == tensor.Float32 {
			t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(toFloat32s(v)))
		} else {
			t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
		}
		return G.NewTensor(x.Graph(), x.Dtype(), len(shape), G.WithShape(shape...), G.WithValue(t),
			G.WithName(fmt.Sprintf("avgpool_%v_%d", shape, x.Graph().AllNodes().Len())))
	}
	sum, err := G.Conv2d(x, constant(tensor.Shape{c, c, kh, kw}, filter), tensor.Shape{kh, kw},
		[]int{l.Padding[0], l.Padding[1]}, []int{st[0], st[1]}, []int{1, 1})
	if err != nil {
		return nil, nil, fmt.Errorf("avgpool: %w", err)
	}
	y, err := G.HadamardProd(sum, constant(tensor.Shape{b, c, out[1], out[2]}, scale))
	if err != nil {
		return nil, nil, fmt.Errorf("avgpool: %w", err)
	}
	return y, nil, nil
}

func toFloat32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for j, x := range v {
		out[j] = float32(x)
	}
	return out
}

func (l AvgPool2D) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileAvgPool[float32], compileAvgPool[float64])
}

func compileAvgPool[T num.Float](c *compiler[T], l AvgPool2D) error {
	if err := c.image("avgpool"); err != nil {
		return err
	}
	out, err := l.OutputShape(shapeOf(c.cur))
	if err != nil {
		return err
	}
	in := c.cur
	o := &avgPoolOp[T]{h: in.h, w: in.w, c: in.c, oh: out[1], ow: out[2]}
	if o.h*o.w*o.c >= 1<<31 {
		return fmt.Errorf("layers: avgpool of %d×%d×%d too large", o.c, o.h, o.w)
	}
	o.cells, o.start = poolWindows(in, o.oh, o.ow, l.Kernel, poolStride(l.Kernel, l.Stride), l.Padding)
	c.add(o, activation{image: true, nhwc: true, h: o.oh, w: o.ow, c: o.c, n: o.oh * o.ow * o.c}, false)
	return nil
}

// GlobalAvgPool2D averages each channel over the whole image: [C, H, W] → [C, 1, 1]
// (PyTorch's AdaptiveAvgPool2d(1)); put a Flatten after it for a Dense.
type GlobalAvgPool2D struct{}

// Kind is "globalavgpool".
func (GlobalAvgPool2D) Kind() string { return "globalavgpool" }

// OutputShape is [C, 1, 1].
func (GlobalAvgPool2D) OutputShape(in []int) ([]int, error) {
	if len(in) != 3 || in[0] <= 0 || in[1] <= 0 || in[2] <= 0 {
		return nil, fmt.Errorf("globalavgpool: input shape %v is not [channels, height, width]", in)
	}
	return []int{in[0], 1, 1}, nil
}

// Params is nil.
func (GlobalAvgPool2D) Params([]int) []ParamSpec { return nil }

// whole is the AvgPool2D of one window covering an image of per-example shape in.
func (GlobalAvgPool2D) whole(in []int) AvgPool2D { return AvgPool2D{Kernel: [2]int{in[1], in[2]}} }

// Apply is AvgPool2D with the image as its one window.
func (l GlobalAvgPool2D) Apply(x *G.Node, p []*G.Node) (*G.Node, *Tap, error) {
	s := x.Shape()
	if len(s) != 4 {
		return nil, nil, fmt.Errorf("globalavgpool: input %v is not [B, C, H, W]", s)
	}
	return l.whole([]int(s[1:])).Apply(x, p)
}

func (l GlobalAvgPool2D) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileGlobalAvgPool[float32], compileGlobalAvgPool[float64])
}

func compileGlobalAvgPool[T num.Float](c *compiler[T], l GlobalAvgPool2D) error {
	if _, err := l.OutputShape(shapeOf(c.cur)); err != nil {
		return err
	}
	return compileAvgPool(c, l.whole(shapeOf(c.cur)))
}

// avgPoolOp is AvgPool2D on NHWC images: output pixel p is the mean of its window's cells
// cells[start[p]…start[p+1]−1] (see poolWindows); backward spreads g/k back onto them.
type avgPoolOp[T num.Float] struct {
	h, w, c, oh, ow int
	cells, start    []int32
}

func (o *avgPoolOp[T]) alias() bool             { return false }
func (o *avgPoolOp[T]) prepare()                {}
func (o *avgPoolOp[T]) scratchSize() (int, int) { return 0, 0 }

func (o *avgPoolOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, n, _ int) {
	inN, outN, c := o.h*o.w*o.c, o.oh*o.ow*o.c, o.c
	for e := range n {
		x, y := in[e*inN:(e+1)*inN], out[e*outN:(e+1)*outN]
		for p := range o.oh * o.ow {
			d := y[p*c : (p+1)*c]
			clear(d)
			win := o.cells[o.start[p]:o.start[p+1]]
			for _, s := range win {
				for ch, v := range x[s : int(s)+c] {
					d[ch] += v
				}
			}
			k := 1 / T(len(win))
			for ch := range d {
				d[ch] *= k
			}
		}
	}
}

func (o *avgPoolOp[T]) backward(_ *nativeScratch[T], _ int, _, _, gOut, gIn []T, n, _ int) {
	if gIn == nil {
		return
	}
	inN, outN, c := o.h*o.w*o.c, o.oh*o.ow*o.c, o.c
	clear(gIn[:n*inN])
	for e := range n {
		dx, g := gIn[e*inN:(e+1)*inN], gOut[e*outN:(e+1)*outN]
		for p := range o.oh * o.ow {
			win := o.cells[o.start[p]:o.start[p+1]]
			k := 1 / T(len(win))
			gp := g[p*c : (p+1)*c]
			for _, s := range win {
				d := dx[s : int(s)+c]
				for ch, v := range gp {
					d[ch] += v * k
				}
			}
		}
	}
}

func init() {
	registerSettings(func(l AvgPool2D) poolSettings {
		return poolSettings{Kernel: l.Kernel, Stride: l.Stride, Padding: l.Padding}
	}, func(s poolSettings) (AvgPool2D, error) {
		return AvgPool2D{Kernel: s.Kernel, Stride: s.Stride, Padding: s.Padding}, nil
	})
	registerPlain[GlobalAvgPool2D]()
}

var (
	_ TorchExporter = AvgPool2D{}
	_ TorchExporter = GlobalAvgPool2D{}
)

// TorchModule is nn.AvgPool2d(kernel_size, stride, padding, count_include_pad=False):
// padded cells are left out of the mean, as ours.
func (l AvgPool2D) TorchModule([]int) (string, error) {
	return fmt.Sprintf("nn.AvgPool2d(kernel_size=%s, stride=%s, padding=%s, count_include_pad=False)",
		torchPair(l.Kernel), torchPair(poolStride(l.Kernel, l.Stride)), torchPair(l.Padding)), nil
}

// TorchModule is nn.AdaptiveAvgPool2d(1): [C, H, W] → [C, 1, 1], as ours (a Flatten
// follows it before a Dense, in PyTorch as here).
func (GlobalAvgPool2D) TorchModule([]int) (string, error) {
	return "nn.AdaptiveAvgPool2d(1)", nil
}
