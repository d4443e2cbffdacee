package layers

import (
	"fmt"
	"runtime"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/parallel"
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
	// Init draws the weight (nil, the zero value, is GlorotUniform); the bias starts at
	// zero.
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
	case len(in) != 3 || num.Prod(in) <= 0:
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
			Init: Zeros{}, FanIn: fanIn, FanOut: fanOut})
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
	tap := &Tap{In: u, Z: z, Shape: convGradShape{InDim: us[3], OutDim: l.Filters, Positions: us[1] * us[2], Bias: !l.NoBias}}
	return z, tap, nil
}

func (l Conv2D) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileConv[float32], compileConv[float64])
}

func compileConv[T num.Float](c *compiler[T], l Conv2D) error {
	if err := c.image("conv"); err != nil {
		return err
	}
	op, out, err := newConvOp(l, c.cur, c.batch, c.params, c.fuse(), c.train, c.nv.first >= 0)
	if err != nil {
		return err
	}
	op.in = c.inputIndex()
	c.add(op, out, c.train) // the tap rebuilds patches from the input
	return nil
}

// convOp is Conv2D (with the activation that follows it) on NHWC images:
//
//	U = im2col(x)          [positions × k], k = kh·kw·C ordered (kh, kw, channel)
//	Z = U·Wpᵀ + b          [positions × F], which is NHWC output
//	y = act(Z)
//
// where Wp is the weight with its columns in U's order (tap InOrder). Backward: dZ =
// dy ⊙ act'(y) is the tap's GradZ; dU = dZ·Wp, and col2im adds dU's rows back onto the
// input positions they came from.
type convOp[T num.Float] struct {
	h, w, c, f             int
	kh, kw, sh, sw, ph, pw int
	oh, ow, k, p           int
	act                    actFunc
	weight, bias           []T // views of the flat parameters: [F, C, kh, kw] and [F]
	wt, wp                 []T // packed: [k × F] for the forward product, [F × k] for dU
	order                  []int
	in                     int // index of the input activation (batch-sized in training)
	gradZ                  []T // batch-sized tap (train), else nil
	train, needIn          bool
	// rstd, when not nil, makes the op a WSConv2D's: prepare standardises the weight
	// (into std, then packed) and keeps each filter's 1/sqrt(Σ(w − μ)² + ε) here.
	rstd, std []T
	// The patch of position p is made of runs[3·runStart[p]…3·runStart[p+1]−1]: triples
	// (src, dst, n) that copy n input values from offset src to patch offset dst; the rest
	// of the patch is zero padding, and padded[p] says there is some.
	runs     []int32
	runStart []int32
	padded   []uint8
	// wino, when not nil, computes the forward product by F(4×4, 3×3) (winograd.go); the
	// patches are then not kept in scratch: the taps form the per-example weight
	// gradients by F(2×2, 3×3) (winograd_grad.go), and rebuild patches for plain sums.
	wino *winograd[T]
}

func newConvOp[T num.Float](l Conv2D, in activation, batch int, ps [][]T, act actFunc, train, needIn bool) (*convOp[T], activation, error) {
	outShape, err := l.OutputShape(shapeOf(in))
	if err != nil {
		return nil, activation{}, err
	}
	s := l.stride()
	o := &convOp[T]{
		h: in.h, w: in.w, c: in.c, f: l.Filters,
		kh: l.Kernel[0], kw: l.Kernel[1], sh: s[0], sw: s[1], ph: l.Padding[0], pw: l.Padding[1],
		oh: outShape[1], ow: outShape[2], act: act, weight: ps[0], train: train, needIn: needIn && train,
	}
	o.k, o.p = o.kh*o.kw*o.c, o.oh*o.ow
	if len(o.weight) != o.f*o.k {
		return nil, activation{}, fmt.Errorf("layers: conv weight view has %d values, want %d", len(o.weight), o.f*o.k)
	}
	if !l.NoBias {
		o.bias = ps[1]
	}
	o.wt, o.wp = make([]T, o.k*o.f), make([]T, o.f*o.k)
	o.order = make([]int, o.k)
	for ki := range o.kh {
		for kj := range o.kw {
			for ch := range o.c {
				o.order[(ki*o.kw+kj)*o.c+ch] = (ch*o.kh+ki)*o.kw + kj
			}
		}
	}
	if train {
		o.gradZ = make([]T, batch*o.p*o.f)
	}
	if int64(batch)*int64(o.p)*int64(o.k) >= 1<<31 || o.h*o.w*o.c >= 1<<31 {
		return nil, activation{}, fmt.Errorf("layers: conv of %d×%d×%d too large", o.c, o.h, o.w)
	}
	o.runStart = make([]int32, o.p+1)
	o.padded = make([]uint8, o.p)
	for y := range o.oh {
		for x := range o.ow {
			p := y*o.ow + x
			o.runStart[p] = int32(len(o.runs) / 3)
			x0 := x*o.sw - o.pw
			j0, j1 := max(0, -x0), min(o.kw, o.w-x0) // kernel columns inside the image
			for ki := range o.kh {
				iy := y*o.sh - o.ph + ki
				if iy < 0 || iy >= o.h || j0 >= j1 {
					o.padded[p] = 1
					continue
				}
				if j0 > 0 || j1 < o.kw {
					o.padded[p] = 1
				}
				o.runs = append(o.runs, int32((iy*o.w+x0+j0)*o.c), int32((ki*o.kw+j0)*o.c), int32((j1-j0)*o.c))
			}
		}
	}
	o.runStart[o.p] = int32(len(o.runs) / 3)
	if useWinograd(o) {
		o.wino = newWinograd(o)
	}
	out := activation{image: true, nhwc: true, h: o.oh, w: o.ow, c: o.f, n: o.p * o.f}
	return o, out, nil
}

// gradient is the layer's Conv2DGradient in the NHWC layout. Its patches are rebuilt from
// the input (P·k values per example from H·W·C) rather than kept: writing them for the
// whole batch would cost more memory traffic than rebuilding them in cache.
func (o *convOp[T]) gradient(nv *Native[T], k int) clipping.Gradient[T] {
	g := &Conv2DGradient[T]{GradZ: o.gradZ, InDim: o.k, OutDim: o.f, Positions: o.p, Bias: o.bias != nil,
		PositionsMajor: true, InOrder: o.order}
	if nv.train {
		g.Patches = nv.patches(o, k)
		if o.wino != nil && o.rstd == nil {
			// The input's storage is read when the tap runs: ReadInput may move it.
			in := &nv.acts[o.in]
			g.wino, g.input = newWinoGrad(o), func(i int) []T { return in.batch[i*in.size : (i+1)*in.size] }
		}
	}
	if o.rstd != nil { // ŵ packed in the patches' order, as the gradient's columns
		return clipping.Formed[T](&wsConvGradient[T]{conv: g, what: o.wp, rstd: o.rstd})
	}
	return clipping.Formed[T](g)
}

func (o *convOp[T]) tapRow() int { return o.p * o.f }

func (o *convOp[T]) alias() bool { return false }

func (o *convOp[T]) scratchSize() (int, int) {
	if o.needIn { // U, and dU
		return o.uSize() + o.p*o.k, 0
	}
	return o.uSize(), 0
}

// uSize is the per-row scratch of the forward pass: the patches U, or Winograd's tiles
// (which are never more than U for the images it is used on; the larger of the two keeps
// Native's chunk as it was).
func (o *convOp[T]) uSize() int {
	if o.wino != nil {
		return max(o.p*o.k, o.wino.scratch(o.c, o.f))
	}
	return o.p * o.k
}

func (o *convOp[T]) prepare() {
	w := o.weight
	if o.rstd != nil {
		if o.std == nil {
			o.std = make([]T, len(w))
		}
		standardize(w, o.std, o.rstd, o.f, o.k)
		w = o.std
	}
	// prepare runs between steps, alone: both cores pack (disjoint filters) and transform
	// (disjoint columns); every value is computed as on one.
	workers := runtime.GOMAXPROCS(0)
	parallel.For(workers, o.f, max(1, o.f/(2*workers)), func(_, lo, hi int) {
		for f := lo; f < hi; f++ {
			for j, src := range o.order {
				v := w[f*o.k+src]
				o.wp[f*o.k+j] = v
				o.wt[j*o.f+f] = v
			}
		}
	})
	if o.wino != nil {
		o.wino.prepare(o.wt, o.c, o.f, workers)
	}
}

// im2col writes the patches of one NHWC image x into u, [positions × k].
func (o *convOp[T]) im2col(x, u []T) {
	x, u = x[:o.h*o.w*o.c], u[:o.p*o.k]
	if x32, ok := any(x).([]float32); ok {
		if f, ok := kernel(patchCopy32, patchCopy32AVX2, patchCopy32NEON); ok {
			f(&x32[0], &any(u).([]float32)[0], &o.runs[0], &o.runStart[0], &o.padded[0], o.p, o.k)
			return
		}
	}
	for p := range o.p {
		row := u[p*o.k : (p+1)*o.k]
		if o.padded[p] != 0 {
			clear(row)
		}
		for r := o.runStart[p]; r < o.runStart[p+1]; r++ {
			src, dst, n := o.runs[3*r], o.runs[3*r+1], o.runs[3*r+2]
			copy(row[dst:dst+n], x[src:src+n])
		}
	}
}

// col2im adds the patch gradients du back onto the image gradient dx (which it overwrites).
func (o *convOp[T]) col2im(du, dx []T) {
	du, dx = du[:o.p*o.k], dx[:o.h*o.w*o.c]
	clear(dx)
	if dx32, ok := any(dx).([]float32); ok {
		if f, ok := kernel(patchAdd32, patchAdd32AVX2, patchAdd32NEON); ok {
			f(&dx32[0], &any(du).([]float32)[0], &o.runs[0], &o.runStart[0], o.p, o.k)
			return
		}
	}
	for p := range o.p {
		row := du[p*o.k : (p+1)*o.k]
		for r := o.runStart[p]; r < o.runStart[p+1]; r++ {
			src, dst, n := o.runs[3*r], o.runs[3*r+1], o.runs[3*r+2]
			d, s := dx[src:src+n], row[dst:dst+n]
			for j, v := range s {
				d[j] += v
			}
		}
	}
}

func (o *convOp[T]) forward(sc *nativeScratch[T], k int, in, out []T, n, lo int) {
	if o.wino != nil {
		o.wino.forward(o, in, out, sc.floats[k][:n*o.uSize()], n)
		return
	}
	u := sc.floats[k][:n*o.p*o.k]
	inN := o.h * o.w * o.c
	for e := range n {
		o.im2col(in[e*inN:(e+1)*inN], u[e*o.p*o.k:(e+1)*o.p*o.k])
	}
	var flags gemm.Flags
	if o.act == actReLU {
		flags = gemm.ReLU
	}
	gemm.Gemm(n*o.p, o.f, o.k, gemm.Matrix[T]{Data: u, Stride: o.k}, o.wt, o.f, out, o.f, o.bias, flags)
	if o.act == actTanh {
		tanhInPlace(out)
	}
}

// outGrad is the tap's rows: the op above writes dy there and backward turns it into dZ
// in place (Native.gradTarget).
func (o *convOp[T]) outGrad(_ *nativeScratch[T], _, lo, n int) []T {
	if o.gradZ == nil {
		return nil
	}
	return o.gradZ[lo*o.p*o.f : (lo+n)*o.p*o.f]
}

func (o *convOp[T]) backward(sc *nativeScratch[T], k int, _, out, gOut, gIn []T, n, lo int) {
	dz := o.gradZ[lo*o.p*o.f : (lo+n)*o.p*o.f]
	activationGrad(o.act, dz, gOut, out)
	if gIn == nil {
		return
	}
	du := sc.floats[k][n*o.uSize() : n*o.uSize()+n*o.p*o.k]
	gemm.Gemm(n*o.p, o.k, o.f, gemm.Matrix[T]{Data: dz, Stride: o.f}, o.wp, o.k, du, o.k, nil, 0)
	inN := o.h * o.w * o.c
	for e := range n {
		o.col2im(du[e*o.p*o.k:(e+1)*o.p*o.k], gIn[e*inN:(e+1)*inN])
	}
}

// patches is the Patches function of conv op o (the k-th op): the patches of example i
// are still in worker's scratch if its last Forward covered i, else rebuilt from the
// batch-sized input.
func (nv *Native[T]) patches(o *convOp[T], k int) func(worker, i int, buf []T) []T {
	in, n := &nv.acts[o.in], o.p*o.k // in.batch is read when it runs: ReadInput may move it
	return func(worker, i int, buf []T) []T {
		if worker >= 0 {
			nv.mu.Lock()
			var sc *nativeScratch[T]
			if worker < len(nv.scratch) {
				sc = nv.scratch[worker]
			}
			nv.mu.Unlock()
			// The worker's scratch is only written by the goroutine now asking.
			if sc != nil && sc.lo <= i && i < sc.hi && o.wino == nil {
				return sc.floats[k][(i-sc.lo)*n : (i-sc.lo+1)*n]
			}
		}
		o.im2col(in.batch[i*in.size:(i+1)*in.size], buf[:n])
		return buf[:n]
	}
}

// convSettings are a Conv2D's stored settings: {"filters":16,"kernel":[8,8],
// "stride":[2,2],"padding":[3,3],"no_bias":false,"init":"glorot-uniform"}.
type convSettings struct {
	Filters int    `json:"filters"`
	Kernel  [2]int `json:"kernel"`
	Stride  [2]int `json:"stride"`
	Padding [2]int `json:"padding"`
	NoBias  bool   `json:"no_bias"`
	Init    string `json:"init"`
}

func init() {
	registerSettings(func(l Conv2D) convSettings {
		return convSettings{Filters: l.Filters, Kernel: l.Kernel, Stride: l.Stride, Padding: l.Padding, NoBias: l.NoBias, Init: kernelInitName(l.Init)}
	}, func(s convSettings) (Conv2D, error) {
		in, err := kernelInit(s.Init)
		return Conv2D{Filters: s.Filters, Kernel: s.Kernel, Stride: s.Stride, Padding: s.Padding, NoBias: s.NoBias, Init: in}, err
	})
}

var _ TorchExporter = Conv2D{}

// TorchModule is nn.Conv2d(C, Filters, kernel_size, stride, padding, bias=not NoBias); its
// weight [Filters, C, kh, kw] (OIHW) and bias [Filters] are ours as they are.
func (l Conv2D) TorchModule(in []int) (string, error) {
	return fmt.Sprintf("nn.Conv2d(%d, %d, kernel_size=%s, stride=%s, padding=%s, bias=%s)",
		in[0], l.Filters, torchPair(l.Kernel), torchPair(l.stride()), torchPair(l.Padding), torchBool(!l.NoBias)), nil
}
