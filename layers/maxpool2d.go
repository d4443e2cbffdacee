package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
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

func (l MaxPool2D) stride() [2]int { return poolStride(l.Kernel, l.Stride) }

// poolStride is stride with zero entries replaced by the kernel size.
func poolStride(kernel, stride [2]int) [2]int {
	for i := range stride {
		if stride[i] == 0 {
			stride[i] = kernel[i]
		}
	}
	return stride
}

// OutputShape is [C, OH, OW] with OH = (H + 2·Padding[0] − kh)/stride + 1 (floor).
func (l MaxPool2D) OutputShape(in []int) ([]int, error) {
	return poolShape("maxpool", l.Kernel, l.Stride, l.Padding, in)
}

// poolShape is the output shape of a pooling layer (see MaxPool2D.OutputShape).
func poolShape(kind string, kernel, stride, padding [2]int, in []int) ([]int, error) {
	s := poolStride(kernel, stride)
	switch {
	case kernel[0] <= 0 || kernel[1] <= 0:
		return nil, fmt.Errorf("%s: kernel %v", kind, kernel)
	case s[0] <= 0 || s[1] <= 0:
		return nil, fmt.Errorf("%s: stride %v", kind, stride)
	case padding[0] < 0 || padding[1] < 0 || 2*padding[0] > kernel[0] || 2*padding[1] > kernel[1]:
		return nil, fmt.Errorf("%s: padding %v must be between 0 and half the kernel %v", kind, padding, kernel)
	case len(in) != 3 || num.Prod(in) <= 0:
		return nil, fmt.Errorf("%s: input shape %v is not [channels, height, width]", kind, in)
	}
	h, w := in[1]+2*padding[0]-kernel[0], in[2]+2*padding[1]-kernel[1]
	if h < 0 || w < 0 {
		return nil, fmt.Errorf("%s: kernel %v larger than padded input %v", kind, kernel, in)
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

func (l MaxPool2D) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileMaxPool[float32], compileMaxPool[float64])
}

func compileMaxPool[T num.Float](c *compiler[T], l MaxPool2D) error {
	if err := c.image("maxpool"); err != nil {
		return err
	}
	op, out, err := newMaxPoolOp[T](l, c.cur)
	if err != nil {
		return err
	}
	c.add(op, out, false)
	return nil
}

// maxPoolOp is MaxPool2D on NHWC images; forward keeps each output's winning input offset
// for backward. The window of output pixel p is cells[start[p]…start[p+1]−1], the input
// offsets of its cells in row-major window order, padded cells left out (never won); the
// first maximum in that order wins.
type maxPoolOp[T num.Float] struct {
	h, w, c, oh, ow int
	cells, start    []int32
}

func newMaxPoolOp[T num.Float](l MaxPool2D, in activation) (*maxPoolOp[T], activation, error) {
	outShape, err := l.OutputShape(shapeOf(in))
	if err != nil {
		return nil, activation{}, err
	}
	s := l.stride()
	o := &maxPoolOp[T]{h: in.h, w: in.w, c: in.c, oh: outShape[1], ow: outShape[2]}
	if o.h*o.w*o.c >= 1<<31 {
		return nil, activation{}, fmt.Errorf("layers: maxpool of %d×%d×%d too large", o.c, o.h, o.w)
	}
	o.cells, o.start = poolWindows(in, o.oh, o.ow, l.Kernel, s, l.Padding)
	return o, activation{image: true, nhwc: true, h: o.oh, w: o.ow, c: o.c, n: o.oh * o.ow * o.c}, nil
}

// poolWindows lists the input cells of each output pixel p of a pool over NHWC image in:
// cells[start[p]…start[p+1]−1] are the offsets of the window's cells inside the image, in
// row-major window order, padded cells left out.
func poolWindows(in activation, oh, ow int, kernel, stride, padding [2]int) (cells, start []int32) {
	start = make([]int32, 0, oh*ow+1)
	for oy := range oh {
		y0 := oy*stride[0] - padding[0]
		for ox := range ow {
			x0 := ox*stride[1] - padding[1]
			start = append(start, int32(len(cells)))
			for r := max(y0, 0); r < min(y0+kernel[0], in.h); r++ {
				for q := max(x0, 0); q < min(x0+kernel[1], in.w); q++ {
					cells = append(cells, int32((r*in.w+q)*in.c))
				}
			}
		}
	}
	return cells, append(start, int32(len(cells)))
}

func (o *maxPoolOp[T]) alias() bool             { return false }
func (o *maxPoolOp[T]) prepare()                {}
func (o *maxPoolOp[T]) scratchSize() (int, int) { return 0, o.oh * o.ow * o.c }

func (o *maxPoolOp[T]) forward(sc *nativeScratch[T], k int, in, out []T, n, _ int) {
	inN, outN, c := o.h*o.w*o.c, o.oh*o.ow*o.c, o.c
	idx := sc.indices[k][:n*outN]
	for e := range n {
		x, y, ix := in[e*inN:(e+1)*inN], out[e*outN:(e+1)*outN], idx[e*outN:(e+1)*outN]
		if x32, ok := any(x).([]float32); ok && useAVX2() {
			f := maxPoolForward32
			if !useAsm() {
				f = maxPoolForward32AVX2
			}
			f(&x32[0], &any(y).([]float32)[0], &ix[0], &o.cells[0], &o.start[0], o.oh*o.ow, c)
			continue
		}
		if x32, ok := any(x).([]float32); ok && useNEON() && c%4 == 0 {
			maxPoolForward32NEON(&x32[0], &any(y).([]float32)[0], &ix[0], &o.cells[0], &o.start[0], o.oh*o.ow, c)
			continue
		}
		for p := range o.oh * o.ow {
			d, best := y[p*c:(p+1)*c], ix[p*c:(p+1)*c]
			first := int(o.cells[o.start[p]])
			copy(d, x[first:first+c])
			for ch := range best {
				best[ch] = int32(first + ch)
			}
			for _, s := range o.cells[o.start[p]+1 : o.start[p+1]] {
				maxInto(d, best, x[s:int(s)+c], s)
			}
		}
	}
}

// maxInto sets d[ch] = max(d[ch], src[ch]) and, where src wins (strictly greater, so the
// first maximum in window order stays), best[ch] = at + ch.
func maxInto[T num.Float](d []T, best []int32, src []T, at int32) {
	best = best[:len(d)]
	src = src[:len(d)]
	for ch, v := range src {
		if v > d[ch] {
			d[ch] = v
			best[ch] = at + int32(ch)
		}
	}
}

func (o *maxPoolOp[T]) backward(sc *nativeScratch[T], k int, _, _, gOut, gIn []T, n, _ int) {
	if gIn == nil {
		return
	}
	inN, outN := o.h*o.w*o.c, o.oh*o.ow*o.c
	idx := sc.indices[k][:n*outN]
	clear(gIn)
	for e := range n {
		dx, g, ix := gIn[e*inN:(e+1)*inN], gOut[e*outN:(e+1)*outN], idx[e*outN:(e+1)*outN]
		if dx32, ok := any(dx).([]float32); ok && useAVX2() {
			f := maxPoolBackward32
			if !useAsm() {
				f = maxPoolBackward32AVX2
			}
			f(&dx32[0], &any(g).([]float32)[0], &ix[0], &o.cells[0], &o.start[0], o.oh*o.ow, o.c)
			continue
		}
		for j, v := range g {
			dx[ix[j]] += v
		}
	}
}

// poolSettings are a MaxPool2D's or AvgPool2D's stored settings:
// {"kernel":[2,2],"stride":[1,1],"padding":[0,0]}.
type poolSettings struct {
	Kernel  [2]int `json:"kernel"`
	Stride  [2]int `json:"stride"`
	Padding [2]int `json:"padding"`
}

func init() {
	registerSettings(func(l MaxPool2D) poolSettings {
		return poolSettings{Kernel: l.Kernel, Stride: l.Stride, Padding: l.Padding}
	}, func(s poolSettings) (MaxPool2D, error) {
		return MaxPool2D{Kernel: s.Kernel, Stride: s.Stride, Padding: s.Padding}, nil
	})
}

var _ TorchExporter = MaxPool2D{}

// TorchModule is nn.MaxPool2d(kernel_size, stride, padding), whose padding never wins
// either (PyTorch pads with −∞).
func (l MaxPool2D) TorchModule([]int) (string, error) {
	return fmt.Sprintf("nn.MaxPool2d(kernel_size=%s, stride=%s, padding=%s)",
		torchPair(l.Kernel), torchPair(l.stride()), torchPair(l.Padding)), nil
}
