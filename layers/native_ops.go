package layers

import (
	"math"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
)

// denseOp is Dense (with the activation that follows it): y = act(x·W + b); backward
// dZ = dy ⊙ act'(y) (the tap's GradZ) and dx = dZ·Wᵀ.
type denseOp[T clipping.Float] struct {
	nIn, nOut    int
	in           int // index of the input activation (the tap's In)
	act          actFunc
	weight, bias []T // views: [nIn × nOut], [nOut]
	wt           []T // packed Wᵀ [nOut × nIn]
	gradZ        []T // batch-sized tap (train)
}

func newDenseOp[T clipping.Float](l Dense, nIn, batch int, ps [][]T, act actFunc, train bool) *denseOp[T] {
	o := &denseOp[T]{nIn: nIn, nOut: l.Units, act: act, weight: ps[0], wt: make([]T, nIn*l.Units)}
	if !l.NoBias {
		o.bias = ps[1]
	}
	if train {
		o.gradZ = make([]T, batch*l.Units)
	}
	return o
}

func (o *denseOp[T]) tap() clipping.Tap[T] {
	return clipping.Tap[T]{Kind: clipping.Dense, GradZ: o.gradZ, InDim: o.nIn, OutDim: o.nOut, Positions: 1, Bias: o.bias != nil}
}

func (o *denseOp[T]) alias() bool             { return false }
func (o *denseOp[T]) scratchSize() (int, int) { return 0, 0 }

func (o *denseOp[T]) prepare() {
	for i := range o.nIn {
		for j := range o.nOut {
			o.wt[j*o.nIn+i] = o.weight[i*o.nOut+j]
		}
	}
}

func (o *denseOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, n, _ int) {
	var flags gemm.Flags
	if o.act == actReLU {
		flags = gemm.ReLU
	}
	gemm.Gemm(n, o.nOut, o.nIn, gemm.Matrix[T]{Data: in, Stride: o.nIn}, o.weight, o.nOut, out, o.nOut, o.bias, flags)
	if o.act == actTanh {
		tanhInPlace(out)
	}
}

func (o *denseOp[T]) backward(_ *nativeScratch[T], _ int, _, out, gOut, gIn []T, n, lo int) {
	dz := o.gradZ[lo*o.nOut : (lo+n)*o.nOut]
	activationGrad(o.act, dz, gOut, out)
	if gIn != nil {
		gemm.Gemm(n, o.nIn, o.nOut, gemm.Matrix[T]{Data: dz, Stride: o.nOut}, o.wt, o.nIn, gIn, o.nIn, nil, 0)
	}
}

// tanhInPlace replaces every value by its hyperbolic tangent.
func tanhInPlace[T clipping.Float](x []T) {
	for j, v := range x {
		x[j] = T(math.Tanh(float64(v)))
	}
}

// activationGrad writes dz = g ⊙ act'(y) from the activation's output y: ReLU passes g
// where y > 0, Tanh multiplies by 1 − y².
func activationGrad[T clipping.Float](f actFunc, dz, g, y []T) {
	switch f {
	case actNone:
		copy(dz, g)
	case actReLU:
		if y32, ok := any(y).([]float32); ok {
			reluGrad32(any(dz).([]float32), any(g).([]float32), y32)
			return
		}
		for j, v := range y {
			if v > 0 {
				dz[j] = g[j]
			} else {
				dz[j] = 0
			}
		}
	case actTanh:
		for j, v := range y {
			dz[j] = g[j] * (1 - v*v)
		}
	}
}

// reluGrad32 is dz = g where y > 0, else 0, for ReLU outputs y ≥ +0, without branches:
// y's bit pattern is zero exactly when y is +0.
func reluGrad32(dz, g, y []float32) {
	g, dz = g[:len(y)], dz[:len(y)]
	for j, v := range y {
		m := math.Float32bits(v)
		mask := uint32(int32(m|-m) >> 31) // all ones when m != 0
		dz[j] = math.Float32frombits(math.Float32bits(g[j]) & mask)
	}
}

// activationOp is ReLU or Tanh on its own (not after a Conv2D or Dense).
type activationOp[T clipping.Float] struct{ f actFunc }

func (o *activationOp[T]) alias() bool             { return false }
func (o *activationOp[T]) scratchSize() (int, int) { return 0, 0 }
func (o *activationOp[T]) prepare()                {}

func (o *activationOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, _, _ int) {
	switch o.f {
	case actReLU:
		for j, v := range in {
			out[j] = max(v, 0)
		}
	case actTanh:
		for j, v := range in {
			out[j] = T(math.Tanh(float64(v)))
		}
	}
}

func (o *activationOp[T]) backward(_ *nativeScratch[T], _ int, _, out, gOut, gIn []T, _, _ int) {
	if gIn != nil {
		activationGrad(o.f, gIn, gOut, out)
	}
}

// maxPoolOp is MaxPool2D on NHWC images; forward keeps each output's winning input index
// (first maximum in window order) for backward. Padded cells are skipped, never won.
type maxPoolOp[T clipping.Float] struct {
	h, w, c, kh, kw, sh, sw, ph, pw, oh, ow int
}

func newMaxPoolOp[T clipping.Float](l MaxPool2D, in activation) (*maxPoolOp[T], activation, error) {
	outShape, err := l.OutputShape(shapeOf(in))
	if err != nil {
		return nil, activation{}, err
	}
	s := l.stride()
	o := &maxPoolOp[T]{h: in.h, w: in.w, c: in.c, kh: l.Kernel[0], kw: l.Kernel[1], sh: s[0], sw: s[1],
		ph: l.Padding[0], pw: l.Padding[1], oh: outShape[1], ow: outShape[2]}
	return o, activation{image: true, nhwc: true, h: o.oh, w: o.ow, c: o.c, n: o.oh * o.ow * o.c}, nil
}

func (o *maxPoolOp[T]) alias() bool             { return false }
func (o *maxPoolOp[T]) prepare()                {}
func (o *maxPoolOp[T]) scratchSize() (int, int) { return 0, o.oh * o.ow * o.c }

func (o *maxPoolOp[T]) forward(sc *nativeScratch[T], k int, in, out []T, n, _ int) {
	inN, outN, c := o.h*o.w*o.c, o.oh*o.ow*o.c, o.c
	idx := sc.indices[k][:n*outN]
	for e := range n {
		x, y, ix := in[e*inN:(e+1)*inN], out[e*outN:(e+1)*outN], idx[e*outN:(e+1)*outN]
		for oy := range o.oh {
			y0 := oy*o.sh - o.ph
			r0, r1 := max(y0, 0), min(y0+o.kh, o.h)
			for ox := range o.ow {
				x0 := ox*o.sw - o.pw
				c0, c1 := max(x0, 0), min(x0+o.kw, o.w)
				d, best := y[(oy*o.ow+ox)*c:][:c], ix[(oy*o.ow+ox)*c:][:c]
				first := (r0*o.w + c0) * c
				copy(d, x[first:first+c])
				for ch := range best {
					best[ch] = int32(first + ch)
				}
				for r := r0; r < r1; r++ {
					for q := c0; q < c1; q++ {
						s := (r*o.w + q) * c
						if s != first {
							maxInto(d, best, x[s:s+c], int32(s))
						}
					}
				}
			}
		}
	}
}

// maxInto sets d[ch] = max(d[ch], src[ch]) and, where src wins (strictly greater, so the
// first maximum in window order stays), best[ch] = at + ch. Written without branches on the
// data, which is random enough to defeat branch prediction.
func maxInto[T clipping.Float](d []T, best []int32, src []T, at int32) {
	best = best[:len(d)]
	src = src[:len(d)]
	for ch, v := range src {
		b := best[ch]
		if v > d[ch] {
			b = at + int32(ch)
		}
		best[ch] = b
		d[ch] = max(d[ch], v)
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
		for j, v := range g {
			dx[ix[j]] += v
		}
	}
}

// cropOp is CenterCrop on NHWC images.
type cropOp[T clipping.Float] struct{ h, w, c, oh, ow, top, left int }

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

// transposeOp converts images between CHW and NHWC (toNHWC), or NHWC to CHW order for
// Flatten.
type transposeOp[T clipping.Float] struct {
	h, w, c int
	toNHWC  bool
}

func (o *transposeOp[T]) alias() bool             { return false }
func (o *transposeOp[T]) prepare()                {}
func (o *transposeOp[T]) scratchSize() (int, int) { return 0, 0 }

// move copies n images from src to dst, CHW to NHWC with toNHWC, else NHWC to CHW.
func (o *transposeOp[T]) move(dst, src []T, n int, toNHWC bool) {
	hw, c := o.h*o.w, o.c
	size := hw * c
	for e := range n {
		d, s := dst[e*size:(e+1)*size], src[e*size:(e+1)*size]
		for p := range hw {
			for ch := range c {
				if toNHWC {
					d[p*c+ch] = s[ch*hw+p]
				} else {
					d[ch*hw+p] = s[p*c+ch]
				}
			}
		}
	}
}

func (o *transposeOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, n, _ int) {
	o.move(out, in, n, o.toNHWC)
}

func (o *transposeOp[T]) backward(_ *nativeScratch[T], _ int, _, _, gOut, gIn []T, n, _ int) {
	if gIn != nil {
		o.move(gIn, gOut, n, !o.toNHWC)
	}
}

// aliasOp is a Flatten whose output is its input (a flat vector, or one channel, or one
// pixel, where NHWC and CHW orders agree).
type aliasOp[T clipping.Float] struct{}

func (aliasOp[T]) alias() bool             { return true }
func (aliasOp[T]) prepare()                {}
func (aliasOp[T]) scratchSize() (int, int) { return 0, 0 }
func (aliasOp[T]) forward(*nativeScratch[T], int, []T, []T, int, int) {
	panic("layers: alias op run")
}
func (aliasOp[T]) backward(*nativeScratch[T], int, []T, []T, []T, []T, int, int) {
	panic("layers: alias op run")
}
