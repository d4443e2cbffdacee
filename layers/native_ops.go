package layers

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
)

// denseOp is Dense (with the activation that follows it): y = act(x·W + b); backward
// dZ = dy ⊙ act'(y) (the tap's GradZ) and dx = dZ·Wᵀ.
//
// With order (after a Flatten of an NHWC image), input j is weight row order[j]: the op
// multiplies by a copy of the weight with its rows permuted, and the tap says so (InOrder).
type denseOp[T clipping.Float] struct {
	nIn, nOut    int
	in           int // index of the input activation (the tap's In)
	act          actFunc
	weight, bias []T   // views: [nIn × nOut], [nOut]
	order        []int // nil: identity
	wperm        []T   // with order: the weight, rows permuted
	wt           []T   // packed (permuted) Wᵀ [nOut × nIn]
	gradZ        []T   // batch-sized tap (train)
}

func newDenseOp[T clipping.Float](l Dense, nIn, batch int, ps [][]T, act actFunc, train bool, order []int) *denseOp[T] {
	o := &denseOp[T]{nIn: nIn, nOut: l.Units, act: act, weight: ps[0], wt: make([]T, nIn*l.Units), order: order}
	if order != nil {
		o.wperm = make([]T, nIn*l.Units)
	}
	if !l.NoBias {
		o.bias = ps[1]
	}
	if train {
		o.gradZ = make([]T, batch*l.Units)
	}
	return o
}

func (o *denseOp[T]) tap() clipping.Tap[T] {
	return clipping.Tap[T]{Kind: clipping.Dense, GradZ: o.gradZ, InDim: o.nIn, OutDim: o.nOut, Positions: 1,
		Bias: o.bias != nil, InOrder: o.order}
}

// w is the weight as the op multiplies by it.
func (o *denseOp[T]) w() []T {
	if o.order != nil {
		return o.wperm
	}
	return o.weight
}

func (o *denseOp[T]) alias() bool             { return false }
func (o *denseOp[T]) scratchSize() (int, int) { return 0, 0 }

func (o *denseOp[T]) prepare() {
	for i, src := range o.order {
		copy(o.wperm[i*o.nOut:(i+1)*o.nOut], o.weight[src*o.nOut:(src+1)*o.nOut])
	}
	w := o.w()
	for i := range o.nIn {
		for j := range o.nOut {
			o.wt[j*o.nIn+i] = w[i*o.nOut+j]
		}
	}
}

func (o *denseOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, n, _ int) {
	var flags gemm.Flags
	if o.act == actReLU {
		flags = gemm.ReLU
	}
	gemm.Gemm(n, o.nOut, o.nIn, gemm.Matrix[T]{Data: in, Stride: o.nIn}, o.w(), o.nOut, out, o.nOut, o.bias, flags)
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
		if y32, ok := any(y).([]float32); ok && (useAsm || useAVX2) && len(y32) > 0 {
			dz32, g32 := any(dz).([]float32), any(g).([]float32)
			_, _ = dz32[len(y32)-1], g32[len(y32)-1]
			f := reluGrad32AVX
			if !useAsm {
				f = reluGrad32AVX2
			}
			f(&dz32[0], &g32[0], &y32[0], len(y32))
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

// maxPoolOp is MaxPool2D on NHWC images; forward keeps each output's winning input offset
// for backward. The window of output pixel p is cells[start[p]…start[p+1]−1], the input
// offsets of its cells in row-major window order, padded cells left out (never won); the
// first maximum in that order wins.
type maxPoolOp[T clipping.Float] struct {
	h, w, c, oh, ow int
	cells, start    []int32
}

func newMaxPoolOp[T clipping.Float](l MaxPool2D, in activation) (*maxPoolOp[T], activation, error) {
	outShape, err := l.OutputShape(shapeOf(in))
	if err != nil {
		return nil, activation{}, err
	}
	s := l.stride()
	o := &maxPoolOp[T]{h: in.h, w: in.w, c: in.c, oh: outShape[1], ow: outShape[2]}
	if o.h*o.w*o.c >= 1<<31 {
		return nil, activation{}, fmt.Errorf("layers: maxpool of %d×%d×%d too large", o.c, o.h, o.w)
	}
	o.start = make([]int32, 0, o.oh*o.ow+1)
	for oy := range o.oh {
		y0 := oy*s[0] - l.Padding[0]
		for ox := range o.ow {
			x0 := ox*s[1] - l.Padding[1]
			o.start = append(o.start, int32(len(o.cells)))
			for r := max(y0, 0); r < min(y0+l.Kernel[0], o.h); r++ {
				for q := max(x0, 0); q < min(x0+l.Kernel[1], o.w); q++ {
					o.cells = append(o.cells, int32((r*o.w+q)*o.c))
				}
			}
		}
	}
	o.start = append(o.start, int32(len(o.cells)))
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
		if x32, ok := any(x).([]float32); ok && (useAsm || useAVX2) {
			f := maxPoolForward32
			if !useAsm {
				f = maxPoolForward32AVX2
			}
			f(&x32[0], &any(y).([]float32)[0], &ix[0], &o.cells[0], &o.start[0], o.oh*o.ow, c)
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
func maxInto[T clipping.Float](d []T, best []int32, src []T, at int32) {
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
		if dx32, ok := any(dx).([]float32); ok && (useAsm || useAVX2) {
			f := maxPoolBackward32
			if !useAsm {
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
