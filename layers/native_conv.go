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
	u, gradZ               []T // batch-sized taps (train), else nil
	needIn                 bool
	runs                   []patchRun // per position, the contiguous pieces of its patch
	runStart               []int      // runs of position p: runs[runStart[p]:runStart[p+1]]
	padded                 []bool     // position p's patch has zero padding
}

// patchRun copies n values from input offset src to patch offset dst.
type patchRun struct{ src, dst, n int }

func newConvOp[T clipping.Float](l Conv2D, in activation, batch int, ps [][]T, act actFunc, train, needIn bool) (*convOp[T], activation, error) {
	outShape, err := l.OutputShape(shapeOf(in))
	if err != nil {
		return nil, activation{}, err
	}
	s := l.stride()
	o := &convOp[T]{
		h: in.h, w: in.w, c: in.c, f: l.Filters,
		kh: l.Kernel[0], kw: l.Kernel[1], sh: s[0], sw: s[1], ph: l.Padding[0], pw: l.Padding[1],
		oh: outShape[1], ow: outShape[2], act: act, weight: ps[0], needIn: needIn && train,
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
		o.u = make([]T, batch*o.p*o.k)
		o.gradZ = make([]T, batch*o.p*o.f)
	}
	o.runStart = make([]int, o.p+1)
	o.padded = make([]bool, o.p)
	for y := range o.oh {
		for x := range o.ow {
			p := y*o.ow + x
			o.runStart[p] = len(o.runs)
			x0 := x*o.sw - o.pw
			j0, j1 := max(0, -x0), min(o.kw, o.w-x0) // kernel columns inside the image
			for ki := range o.kh {
				iy := y*o.sh - o.ph + ki
				if iy < 0 || iy >= o.h || j0 >= j1 {
					o.padded[p] = true
					continue
				}
				if j0 > 0 || j1 < o.kw {
					o.padded[p] = true
				}
				o.runs = append(o.runs, patchRun{src: (iy*o.w + x0 + j0) * o.c, dst: (ki*o.kw + j0) * o.c, n: (j1 - j0) * o.c})
			}
		}
	}
	o.runStart[o.p] = len(o.runs)
	out := activation{image: true, nhwc: true, h: o.oh, w: o.ow, c: o.f, n: o.p * o.f}
	return o, out, nil
}

func (o *convOp[T]) tap() clipping.Tap[T] {
	return clipping.Tap[T]{Kind: clipping.Conv, In: o.u, GradZ: o.gradZ, InDim: o.k, OutDim: o.f,
		Positions: o.p, Bias: o.bias != nil, PositionsMajor: true, InOrder: o.order}
}

func (o *convOp[T]) alias() bool { return false }

func (o *convOp[T]) scratchSize() (int, int) {
	if o.u == nil || o.needIn { // U (forward only) or dU
		return o.p * o.k, 0
	}
	return 0, 0
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
	for p := range o.p {
		row := u[p*o.k : (p+1)*o.k]
		if o.padded[p] {
			clear(row)
		}
		for _, r := range o.runs[o.runStart[p]:o.runStart[p+1]] {
			copy(row[r.dst:r.dst+r.n], x[r.src:r.src+r.n])
		}
	}
}

// col2im adds the patch gradients du back onto the image gradient dx (which it overwrites).
func (o *convOp[T]) col2im(du, dx []T) {
	clear(dx)
	for p := range o.p {
		row := du[p*o.k : (p+1)*o.k]
		for _, r := range o.runs[o.runStart[p]:o.runStart[p+1]] {
			d, s := dx[r.src:r.src+r.n], row[r.dst:r.dst+r.n]
			for j, v := range s {
				d[j] += v
			}
		}
	}
}

func (o *convOp[T]) forward(sc *nativeScratch[T], k int, in, out []T, n, lo int) {
	var u []T
	if o.u != nil {
		u = o.u[lo*o.p*o.k : (lo+n)*o.p*o.k]
	} else {
		u = sc.floats[k][:n*o.p*o.k]
	}
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
	du := sc.floats[k][:n*o.p*o.k]
	gemm.Gemm(n*o.p, o.k, o.f, gemm.Matrix[T]{Data: dz, Stride: o.f}, o.wp, o.k, du, o.k, nil, 0)
	inN := o.h * o.w * o.c
	for e := range n {
		o.col2im(du[e*o.p*o.k:(e+1)*o.p*o.k], gIn[e*inN:(e+1)*inN])
	}
}
