package layers

import (
	"fmt"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
)

// convOp is Conv2D (with the activation that follows it) on NHWC images:
//
//	U = im2col(x)          [positions × k], k = kh·kw·C ordered (kh, kw, channel)
//	Z = U·Wpᵀ + b          [positions × F], which is NHWC output
//	y = act(Z)
//
// where Wp is the weight with its columns in U's order (tap InOrder). Backward: dZ =
// dy ⊙ act'(y) is the tap's GradZ; dU = dZ·Wp, and col2im adds dU's rows back onto the
// input positions they came from.
type convOp[T clipping.Float] struct {
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
	// The patch of position p is made of runs[3·runStart[p]…3·runStart[p+1]−1]: triples
	// (src, dst, n) that copy n input values from offset src to patch offset dst; the rest
	// of the patch is zero padding, and padded[p] says there is some.
	runs     []int32
	runStart []int32
	padded   []uint8
}

func newConvOp[T clipping.Float](l Conv2D, in activation, batch int, ps [][]T, act actFunc, train, needIn bool) (*convOp[T], activation, error) {
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
	out := activation{image: true, nhwc: true, h: o.oh, w: o.ow, c: o.f, n: o.p * o.f}
	return o, out, nil
}

// tap is the layer's tap; Native sets its Patches once the input's storage is known. The
// patches are rebuilt from the input (P·k values per example from H·W·C) rather than kept:
// writing them for the whole batch would cost more memory traffic than rebuilding them in
// cache.
func (o *convOp[T]) tap() clipping.Tap[T] {
	return clipping.Tap[T]{Kind: clipping.Conv, GradZ: o.gradZ, InDim: o.k, OutDim: o.f,
		Positions: o.p, Bias: o.bias != nil, PositionsMajor: true, InOrder: o.order}
}

func (o *convOp[T]) alias() bool { return false }

func (o *convOp[T]) scratchSize() (int, int) {
	if o.needIn { // U, and dU
		return 2 * o.p * o.k, 0
	}
	return o.p * o.k, 0
}

func (o *convOp[T]) prepare() {
	for f := range o.f {
		for j, src := range o.order {
			v := o.weight[f*o.k+src]
			o.wp[f*o.k+j] = v
			o.wt[j*o.f+f] = v
		}
	}
}

// im2col writes the patches of one NHWC image x into u, [positions × k].
func (o *convOp[T]) im2col(x, u []T) {
	x, u = x[:o.h*o.w*o.c], u[:o.p*o.k]
	if x32, ok := any(x).([]float32); ok && useAsm {
		patchCopy32(&x32[0], &any(u).([]float32)[0], &o.runs[0], &o.runStart[0], &o.padded[0], o.p, o.k)
		return
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
	if dx32, ok := any(dx).([]float32); ok && useAsm {
		patchAdd32(&dx32[0], &any(du).([]float32)[0], &o.runs[0], &o.runStart[0], o.p, o.k)
		return
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

func (o *convOp[T]) backward(sc *nativeScratch[T], k int, _, out, gOut, gIn []T, n, lo int) {
	dz := o.gradZ[lo*o.p*o.f : (lo+n)*o.p*o.f]
	activationGrad(o.act, dz, gOut, out)
	if gIn == nil {
		return
	}
	du := sc.floats[k][n*o.p*o.k : 2*n*o.p*o.k]
	gemm.Gemm(n*o.p, o.k, o.f, gemm.Matrix[T]{Data: dz, Stride: o.f}, o.wp, o.k, du, o.k, nil, 0)
	inN := o.h * o.w * o.c
	for e := range n {
		o.col2im(du[e*o.p*o.k:(e+1)*o.p*o.k], gIn[e*inN:(e+1)*inN])
	}
}
