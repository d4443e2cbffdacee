package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// Scale is a test-only parametrised layer written as a new layer of this package would
// be, to show that a layer kind takes two new files and no edit anywhere else: this file
// (the layer, its Gorgonia fragment, its native op and its stored settings) and
// scale_grad_test.go (its per-example gradient). Nothing outside the two names it but
// the tests in scale_nn_test.go, which train it natively through nn, save and reload its
// architecture, and check its per-example gradients by brute force.
//
// Scale multiplies each feature of a flat input by its own factor: y = x ⊙ γ (+ β with
// Bias), γ starting at ones and β at zeros.
type Scale struct {
	Bias bool
}

// Kind is "testscale".
func (Scale) Kind() string { return "testscale" }

// OutputShape is in, a flat vector.
func (Scale) OutputShape(in []int) ([]int, error) {
	if len(in) != 1 || in[0] <= 0 {
		return nil, fmt.Errorf("testscale: input shape %v is not flat; put a Flatten before it", in)
	}
	return in, nil
}

// Params is γ ("weight", [n]) then, with Bias, β ("bias", [n]); each a [1, n] node.
func (l Scale) Params(in []int) []ParamSpec {
	n := in[0]
	ps := []ParamSpec{{Name: "weight", Shape: []int{n}, NodeShape: []int{1, n}, Init: Ones{}, FanIn: 1, FanOut: 1}}
	if l.Bias {
		ps = append(ps, ParamSpec{Name: "bias", Shape: []int{n}, NodeShape: []int{1, n}, Init: Zeros{}, FanIn: 1, FanOut: 1})
	}
	return ps
}

// Apply is Z = x ⊙ γ (+ β), γ and β broadcast over the batch; the tap is (x, Z).
func (l Scale) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	z, err := G.BroadcastHadamardProd(x, params[0], nil, []byte{0})
	if err != nil {
		return nil, nil, fmt.Errorf("testscale: %w", err)
	}
	if l.Bias {
		if z, err = G.BroadcastAdd(z, params[1], nil, []byte{0}); err != nil {
			return nil, nil, fmt.Errorf("testscale bias: %w", err)
		}
	}
	return z, &Tap{In: x, Z: z, Shape: scaleShape{n: x.Shape()[1], bias: l.Bias}}, nil
}

func (l Scale) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileScale[float32], compileScale[float64])
}

func compileScale[T num.Float](c *compiler[T], l Scale) error {
	if c.cur.image {
		return fmt.Errorf("layers: testscale on a %v; put a Flatten before it", c.cur)
	}
	o := &scaleOp[T]{n: c.cur.n, in: c.inputIndex(), gamma: c.params[0]}
	if l.Bias {
		o.beta = c.params[1]
	}
	if c.train {
		o.gradZ = make([]T, c.batch*o.n)
	}
	c.add(o, c.cur, c.train) // the input is the tap's In: batch-sized when training
	return nil
}

// scaleOp is Scale natively: y = x ⊙ γ (+ β); backward keeps dZ (the tap) and gives
// dx = dZ ⊙ γ.
type scaleOp[T num.Float] struct {
	n, in       int
	gamma, beta []T // views [n]; beta nil without Bias
	gradZ       []T // batch-sized tap (train)
}

func (o *scaleOp[T]) alias() bool             { return false }
func (o *scaleOp[T]) prepare()                {}
func (o *scaleOp[T]) scratchSize() (int, int) { return 0, 0 }

func (o *scaleOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, rows, _ int) {
	for e := range rows {
		x, y := in[e*o.n:(e+1)*o.n], out[e*o.n:(e+1)*o.n]
		for j, v := range x {
			y[j] = v * o.gamma[j]
			if o.beta != nil {
				y[j] += o.beta[j]
			}
		}
	}
}

func (o *scaleOp[T]) backward(_ *nativeScratch[T], _ int, _, _, gOut, gIn []T, rows, lo int) {
	copy(o.gradZ[lo*o.n:(lo+rows)*o.n], gOut[:rows*o.n])
	if gIn == nil {
		return
	}
	for e := range rows {
		for j := range o.n {
			gIn[e*o.n+j] = gOut[e*o.n+j] * o.gamma[j]
		}
	}
}

// gradient is the layer's per-example gradient over its (batch-sized) input and dZ.
func (o *scaleOp[T]) gradient(nv *Native[T], _ int) clipping.Gradient[T] {
	return clipping.Formed[T](&scaleGradient[T]{x: nv.acts[o.in].batch, dz: o.gradZ, n: o.n, bias: o.beta != nil})
}

func (o *scaleOp[T]) tapRow() int { return o.n }

// scaleSettings are a Scale's stored settings: {"bias":true}.
type scaleSettings struct {
	Bias bool `json:"bias"`
}

func init() {
	registerSettings(func(l Scale) scaleSettings { return scaleSettings{Bias: l.Bias} },
		func(s scaleSettings) (Scale, error) { return Scale{Bias: s.Bias}, nil })
}
