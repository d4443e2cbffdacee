package layers

import (
	"fmt"
	"runtime"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/parallel"
	"github.com/privtrain/privtrain/smoothing"
)

// Dense is a fully connected layer Z = A·W + b with W of shape [in, Units] (as Keras) and b
// of shape [Units]. Its input must be flat: put a Flatten before it.
type Dense struct {
	Units  int
	NoBias bool
	// Init draws the weight (nil, the zero value, is GlorotUniform); the bias starts at
	// zero.
	Init Initializer
}

// Kind is "dense".
func (Dense) Kind() string { return "dense" }

// OutputShape is [Units].
func (l Dense) OutputShape(in []int) ([]int, error) {
	if l.Units <= 0 {
		return nil, fmt.Errorf("dense: %d units", l.Units)
	}
	if len(in) != 1 || in[0] <= 0 {
		return nil, fmt.Errorf("dense: input shape %v is not flat; put a Flatten before it", in)
	}
	return []int{l.Units}, nil
}

// Params is weight [in, Units], then bias [Units].
func (l Dense) Params(in []int) []ParamSpec {
	ps := []ParamSpec{{Name: "weight", Shape: []int{in[0], l.Units}, Init: l.Init, FanIn: in[0], FanOut: l.Units}}
	if !l.NoBias {
		ps = append(ps, ParamSpec{Name: "bias", Shape: []int{l.Units}, NodeShape: []int{1, l.Units},
			Init: Zeros{}, FanIn: in[0], FanOut: l.Units})
	}
	return ps
}

// Apply computes Z = x·W (+ b broadcast over the batch).
func (l Dense) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	z, err := G.Mul(x, params[0])
	if err != nil {
		return nil, nil, fmt.Errorf("dense: %w", err)
	}
	if !l.NoBias {
		if z, err = G.BroadcastAdd(z, params[1], nil, []byte{0}); err != nil {
			return nil, nil, fmt.Errorf("dense bias: %w", err)
		}
	}
	tap := &Tap{In: x, Z: z, Shape: denseGradShape{InDim: x.Shape()[1], OutDim: l.Units, Bias: !l.NoBias}}
	return z, tap, nil
}

func (l Dense) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileDense[float32], compileDense[float64])
}

// acceptsOrder: a Dense takes its input in any order by permuting its weight rows.
func (Dense) acceptsOrder() {}

func compileDense[T num.Float](c *compiler[T], l Dense) error {
	if c.cur.image {
		return fmt.Errorf("layers: dense on a %v; put a Flatten before it", c.cur)
	}
	op := newDenseOp(l, c.cur.n, c.batch, c.params, c.fuse(), c.train, c.takeOrder())
	op.in = c.inputIndex()
	// Wᵀ is read only by backward's input gradient, which a forward-only Native never runs
	// and the first parametrised op never computes (Native.Backward): then it is not kept.
	if op.noWt = !c.train || c.nv.first < 0; op.noWt {
		op.wt = nil
	}
	c.add(op, activation{n: l.Units}, c.train) // the input is the tap's In
	return nil
}

// denseOp is Dense (with the activation that follows it): y = act(x·W + b); backward
// dZ = dy ⊙ act'(y) (the tap's GradZ) and dx = dZ·Wᵀ.
//
// With order (after a Flatten of an NHWC image), input j is weight row order[j]: the op
// multiplies by a copy of the weight with its rows permuted, and the tap says so (InOrder).
type denseOp[T num.Float] struct {
	nIn, nOut    int
	in           int // index of the input activation (the tap's In)
	act          actFunc
	weight, bias []T   // views: [nIn × nOut], [nOut]
	order        []int // nil: identity
	wperm        []T   // with order: the weight, rows permuted
	wt           []T   // packed (permuted) Wᵀ [nOut × nIn]
	noWt         bool  // wt is not kept: no input gradient is computed (forward only, or the first parametrised op)
	gradZ        []T   // batch-sized tap (train)
}

func newDenseOp[T num.Float](l Dense, nIn, batch int, ps [][]T, act actFunc, train bool, order []int) *denseOp[T] {
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

// gradient is the layer's DenseGradient: its input activation (batch-sized) and dZ.
func (o *denseOp[T]) gradient(nv *Native[T], _ int) clipping.Gradient[T] {
	g := &DenseGradient[T]{In: nv.acts[o.in].batch, GradZ: o.gradZ, InDim: o.nIn, OutDim: o.nOut,
		Bias: o.bias != nil, InOrder: o.order}
	if o.order != nil {
		g.inv = inverse(o.order)
	}
	nv.inTaps = append(nv.inTaps, g)
	return g
}

func (o *denseOp[T]) tapRow() int { return o.nOut }

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
	// prepare runs between steps, alone: both cores copy and transpose disjoint rows.
	workers := runtime.GOMAXPROCS(0)
	if o.order != nil {
		parallel.For(workers, o.nIn, max(64, o.nIn/(2*workers)), func(_, lo, hi int) {
			for i, src := range o.order[lo:hi] {
				copy(o.wperm[(lo+i)*o.nOut:(lo+i+1)*o.nOut], o.weight[src*o.nOut:(src+1)*o.nOut])
			}
		})
	}
	if o.noWt {
		return
	}
	w := o.w()
	parallel.For(workers, o.nIn, max(64, o.nIn/(2*workers)), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			for j := range o.nOut {
				o.wt[j*o.nIn+i] = w[i*o.nOut+j]
			}
		}
	})
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

// outGrad is the tap's rows (see convOp.outGrad).
func (o *denseOp[T]) outGrad(_ *nativeScratch[T], _, lo, n int) []T {
	if o.gradZ == nil {
		return nil
	}
	return o.gradZ[lo*o.nOut : (lo+n)*o.nOut]
}

func (o *denseOp[T]) backward(_ *nativeScratch[T], _ int, _, out, gOut, gIn []T, n, lo int) {
	dz := o.gradZ[lo*o.nOut : (lo+n)*o.nOut]
	activationGrad(o.act, dz, gOut, out)
	if gIn != nil {
		if o.noWt {
			panic("layers: the input gradient of a dense op that keeps no Wᵀ")
		}
		gemm.Gemm(n, o.nIn, o.nOut, gemm.Matrix[T]{Data: dz, Stride: o.nOut}, o.wt, o.nIn, gIn, o.nIn, nil, 0)
	}
}

// denseSettings are a Dense's stored settings:
// {"units":10,"no_bias":false,"init":"glorot-uniform"}.
type denseSettings struct {
	Units  int    `json:"units"`
	NoBias bool   `json:"no_bias"`
	Init   string `json:"init"`
}

func init() {
	registerSettings(func(l Dense) denseSettings {
		return denseSettings{Units: l.Units, NoBias: l.NoBias, Init: kernelInitName(l.Init)}
	}, func(s denseSettings) (Dense, error) {
		in, err := kernelInit(s.Init)
		return Dense{Units: s.Units, NoBias: s.NoBias, Init: in}, err
	})
}

var _ TorchParamsExporter = Dense{}

// TorchModule is nn.Linear(in, Units, bias=not NoBias).
func (l Dense) TorchModule(in []int) (string, error) {
	return fmt.Sprintf("nn.Linear(%d, %d, bias=%s)", in[0], l.Units, torchBool(!l.NoBias)), nil
}

// TorchParams is the weight transposed to Linear's [Units, in], then the bias [Units].
func (l Dense) TorchParams(in []int, params [][]float64) ([]TorchTensor, error) {
	n, out := in[0], l.Units
	w := params[0] // [in, out]
	if len(w) != n*out {
		return nil, fmt.Errorf("dense: %d weights for [%d, %d]", len(w), n, out)
	}
	wt := make([]float64, len(w))
	for r := range n {
		for c := range out {
			wt[c*n+r] = w[r*out+c]
		}
	}
	ts := []TorchTensor{{Name: "weight", Shape: []int{out, n}, Values: wt}}
	if !l.NoBias {
		ts = append(ts, TorchTensor{Name: "bias", Shape: []int{out}, Values: params[1]})
	}
	return ts, nil
}

// SmoothingAxes: the weight, stored [in, out] here and [out, in] in PyTorch, is smoothed
// along its inputs (smoothing.Along(0)), each output unit's inputs as PyTorch flattens
// them; the bias in storage order.
func (l Dense) SmoothingAxes(in []int) []smoothing.Axis {
	axes := []smoothing.Axis{smoothing.Along(0)}
	if !l.NoBias {
		axes = append(axes, smoothing.Flat())
	}
	return axes
}

var _ Smoothed = Dense{}
