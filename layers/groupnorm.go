package layers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// GroupNorm normalises each example on its own (Wu & He, "Group Normalization", ECCV
// 2018): the C channels of a CHW input are split into Groups groups of C/Groups
// consecutive channels; each group's C/Groups·H·W values x are mapped to
//
//	x̂ = (x − μ) / sqrt(σ² + ε),   μ, σ² the mean and (biased) variance of the group,
//
// with ε = 1e-5 as PyTorch, and channel c's values then to y = γ_c·x̂ + β_c. No statistic
// mixes examples, so per-example gradients and clipping hold (BatchNorm's do not).
// GroupNorm{Groups: 1} is LayerNorm over C×H×W; Groups = C normalises each channel.
type GroupNorm struct {
	Groups int
	// NoAffine leaves out γ and β (y = x̂): the layer then has no parameters, as
	// PyTorch's affine=False.
	NoAffine bool
}

// groupNormEps is ε, PyTorch's default.
const groupNormEps = 1e-5

// Kind is "groupnorm".
func (GroupNorm) Kind() string { return "groupnorm" }

// OutputShape is in, a CHW image whose channels the groups divide.
func (l GroupNorm) OutputShape(in []int) ([]int, error) {
	switch {
	case len(in) != 3 || in[0] <= 0 || in[1] <= 0 || in[2] <= 0:
		return nil, fmt.Errorf("groupnorm: input shape %v is not a CHW image", in)
	case l.Groups <= 0 || in[0]%l.Groups != 0:
		return nil, fmt.Errorf("groupnorm: %d groups do not divide %d channels", l.Groups, in[0])
	}
	return in, nil
}

// Params is the scale γ ("weight", [C], ones) then the shift β ("bias", [C], zeros), each a
// [C, 1] node; nil with NoAffine.
func (l GroupNorm) Params(in []int) []ParamSpec {
	if l.NoAffine {
		return nil
	}
	c := in[0]
	return []ParamSpec{
		{Name: "weight", Shape: []int{c}, NodeShape: []int{c, 1}, Init: Ones{}, FanIn: 1, FanOut: 1},
		{Name: "bias", Shape: []int{c}, NodeShape: []int{c, 1}, Init: Zeros{}, FanIn: 1, FanOut: 1},
	}
}

// Apply builds the reference graph on the rows of [B·Groups, C/Groups·H·W] (one group
// of one example each, the memory order of [B, C, H, W]): the mean and variance are
// products with a column of 1/n, spread back over a row by a product with a row of ones,
// and the affine step multiplies by γ and adds β spread the same way. Only matrix
// products and elementwise ops of equal shapes are used, and x̂ is never reshaped before
// an elementwise op: built with Mean and the Broadcast ops, or with the affine step on a
// reshaped x̂, Gorgonia v0.9.18's reverse mode gave wrong input gradients (found against
// finite differences of the native kernel). The tap's In is x̂, its Z the output before
// the final reshape.
func (l GroupNorm) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	s := x.Shape()
	if len(s) != 4 {
		return nil, nil, fmt.Errorf("groupnorm: input %v is not [B, C, H, W]", s)
	}
	b, c, h, w := s[0], s[1], s[2], s[3]
	rows, n := b*l.Groups, c/l.Groups*h*w
	g := x.Graph()
	filled := func(r, q int, v float64) *G.Node {
		var t tensor.Tensor
		if x.Dtype() == tensor.Float32 {
			d := make([]float32, r*q)
			for j := range d {
				d[j] = float32(v)
			}
			t = tensor.New(tensor.WithShape(r, q), tensor.WithBacking(d))
		} else {
			d := make([]float64, r*q)
			for j := range d {
				d[j] = v
			}
			t = tensor.New(tensor.WithShape(r, q), tensor.WithBacking(d))
		}
		return G.NewMatrix(g, x.Dtype(), G.WithShape(r, q), G.WithValue(t), G.WithName(fmt.Sprintf("groupnorm_%d_%d_%g_%d", r, q, v, g.AllNodes().Len())))
	}
	colMean, rowOnes := filled(n, 1, 1/float64(n)), filled(1, n, 1)
	eps := filled(rows, 1, groupNormEps)
	var xhat *G.Node // [B·Groups, n], the memory order of [B, C, H, W]
	err := func() error {
		xr, err := G.Reshape(x, tensor.Shape{rows, n})
		if err != nil {
			return err
		}
		mean, err := G.Mul(xr, colMean)
		if err != nil {
			return err
		}
		spread, err := G.Mul(mean, rowOnes)
		if err != nil {
			return err
		}
		xc, err := G.Sub(xr, spread)
		if err != nil {
			return err
		}
		sq, err := G.Square(xc)
		if err != nil {
			return err
		}
		v, err := G.Mul(sq, colMean)
		if err != nil {
			return err
		}
		if v, err = G.Add(v, eps); err != nil {
			return err
		}
		sd, err := G.Sqrt(v)
		if err != nil {
			return err
		}
		if sd, err = G.Mul(sd, rowOnes); err != nil {
			return err
		}
		if xhat, err = G.HadamardDiv(xc, sd); err != nil {
			return err
		}
		return nil
	}()
	if err != nil {
		return nil, nil, fmt.Errorf("groupnorm: %w", err)
	}
	out := tensor.Shape{b, c, h, w}
	if l.NoAffine {
		y, err := G.Reshape(xhat, out)
		return y, nil, err
	}
	// y = x̂ ⊙ Γ + Β on the same rows, Γ's row for group g of any example holding
	// γ_c for the channels c of g, each repeated over the H·W positions.
	hw := h * w
	onesHW, onesB := filled(1, hw, 1), filled(b, 1, 1)
	expand := func(p *G.Node) (*G.Node, error) {
		m, err := G.Mul(p, onesHW) // [C, HW]
		if err != nil {
			return nil, err
		}
		if m, err = G.Reshape(m, tensor.Shape{1, c * hw}); err != nil {
			return nil, err
		}
		if m, err = G.Mul(onesB, m); err != nil { // [B, C·HW]
			return nil, err
		}
		return G.Reshape(m, tensor.Shape{rows, n})
	}
	var z *G.Node
	err = func() error {
		gamma, err := expand(params[0])
		if err != nil {
			return err
		}
		beta, err := expand(params[1])
		if err != nil {
			return err
		}
		if z, err = G.HadamardProd(xhat, gamma); err != nil {
			return err
		}
		z, err = G.Add(z, beta)
		return err
	}()
	if err != nil {
		return nil, nil, fmt.Errorf("groupnorm affine: %w", err)
	}
	y, err := G.Reshape(z, out)
	if err != nil {
		return nil, nil, fmt.Errorf("groupnorm: %w", err)
	}
	return y, &Tap{In: xhat, Z: z, Shape: groupNormShape{c: c, p: hw}}, nil
}

func (l GroupNorm) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileGroupNorm[float32], compileGroupNorm[float64])
}

func compileGroupNorm[T num.Float](c *compiler[T], l GroupNorm) error {
	if err := c.image("groupnorm"); err != nil {
		return err
	}
	if _, err := l.OutputShape(shapeOf(c.cur)); err != nil {
		return err
	}
	cur := c.cur
	o := &groupNormOp[T]{c: cur.c, p: cur.h * cur.w, groups: l.Groups}
	if l.NoAffine {
		c.add(o, cur, false)
		return nil
	}
	o.gamma, o.beta = c.params[0], c.params[1]
	if c.train {
		o.xhat = make([]T, c.batch*cur.n)
		o.gradZ = make([]T, c.batch*cur.n)
	}
	c.add(&groupNormTapOp[T]{o}, cur, false)
	return nil
}

// groupNormOp is GroupNorm on NHWC images (channel innermost, so a group is a run of
// C/Groups values at each position). Forward keeps x̂ (batch-sized for the tap when the
// layer has parameters and trains, else in scratch) and each group's 1/sqrt(σ² + ε) in
// scratch. Backward, with g = dy·γ (dy without affine) and means over the group:
//
//	dx = (g − mean(g) − x̂·mean(g·x̂)) / sqrt(σ² + ε)
type groupNormOp[T num.Float] struct {
	c, p, groups int
	gamma, beta  []T // views [C]; nil without affine
	xhat, gradZ  []T // batch-sized x̂ and dy (the tap), or nil
}

func (o *groupNormOp[T]) alias() bool { return false }
func (o *groupNormOp[T]) prepare()    {}

func (o *groupNormOp[T]) scratchSize() (int, int) {
	if o.xhat != nil {
		return o.groups, 0
	}
	return o.c*o.p + o.groups, 0
}

// buffers are x̂ and 1/sqrt(σ² + ε) of n rows from lo.
func (o *groupNormOp[T]) buffers(sc *nativeScratch[T], k, n, lo int) (xhat, rstd []T) {
	size := o.c * o.p
	f := sc.floats[k]
	rstd = f[:n*o.groups]
	if o.xhat != nil {
		return o.xhat[lo*size : (lo+n)*size], rstd
	}
	return f[n*o.groups : n*o.groups+n*size], rstd
}

func (o *groupNormOp[T]) forward(sc *nativeScratch[T], k int, in, out []T, n, lo int) {
	size, cg := o.c*o.p, o.c/o.groups
	xhat, rstd := o.buffers(sc, k, n, lo)
	cnt := float64(cg * o.p)
	for e := range n {
		x, xh, y := in[e*size:(e+1)*size], xhat[e*size:(e+1)*size], out[e*size:(e+1)*size]
		for g := range o.groups {
			c0 := g * cg
			var s float64
			for q := range o.p {
				for _, v := range x[q*o.c+c0 : q*o.c+c0+cg] {
					s += float64(v)
				}
			}
			mean := s / cnt
			var ss float64
			for q := range o.p {
				for _, v := range x[q*o.c+c0 : q*o.c+c0+cg] {
					d := float64(v) - mean
					ss += d * d
				}
			}
			r := 1 / math.Sqrt(ss/cnt+groupNormEps)
			rstd[e*o.groups+g] = T(r)
			for q := range o.p {
				for j := q*o.c + c0; j < q*o.c+c0+cg; j++ {
					xh[j] = T((float64(x[j]) - mean) * r)
				}
			}
		}
		if o.gamma == nil {
			copy(y, xh)
			continue
		}
		for q := range o.p {
			for ch := range o.c {
				j := q*o.c + ch
				y[j] = o.gamma[ch]*xh[j] + o.beta[ch]
			}
		}
	}
}

func (o *groupNormOp[T]) backward(sc *nativeScratch[T], k int, _, _, gOut, gIn []T, n, lo int) {
	size, cg := o.c*o.p, o.c/o.groups
	if o.gradZ != nil {
		copy(o.gradZ[lo*size:(lo+n)*size], gOut[:n*size])
	}
	if gIn == nil {
		return
	}
	xhat, rstd := o.buffers(sc, k, n, lo)
	cnt := float64(cg * o.p)
	gain := func(ch int) float64 {
		if o.gamma == nil {
			return 1
		}
		return float64(o.gamma[ch])
	}
	for e := range n {
		dy, xh, dx := gOut[e*size:(e+1)*size], xhat[e*size:(e+1)*size], gIn[e*size:(e+1)*size]
		for g := range o.groups {
			c0 := g * cg
			var sg, sgx float64
			for q := range o.p {
				for ch := c0; ch < c0+cg; ch++ {
					j := q*o.c + ch
					v := float64(dy[j]) * gain(ch)
					sg += v
					sgx += v * float64(xh[j])
				}
			}
			mg, mgx, r := sg/cnt, sgx/cnt, float64(rstd[e*o.groups+g])
			for q := range o.p {
				for ch := c0; ch < c0+cg; ch++ {
					j := q*o.c + ch
					dx[j] = T((float64(dy[j])*gain(ch) - mg - float64(xh[j])*mgx) * r)
				}
			}
		}
	}
}

// groupNormTapOp is a GroupNorm with γ and β: its tap is x̂ and dy.
type groupNormTapOp[T num.Float] struct{ *groupNormOp[T] }

func (o *groupNormTapOp[T]) gradient(*Native[T], int) clipping.Gradient[T] {
	return clipping.Formed[T](&groupNormGradient[T]{xhat: o.xhat, dy: o.gradZ, c: o.c, p: o.p, nhwc: true})
}

func (o *groupNormTapOp[T]) tapRow() int { return 2 * o.c * o.p }

// groupNormSettings are a GroupNorm's stored settings: {"groups":9,"no_affine":true}.
type groupNormSettings struct {
	Groups   int  `json:"groups"`
	NoAffine bool `json:"no_affine"`
}

func init() {
	registerSettings(func(l GroupNorm) groupNormSettings {
		return groupNormSettings{Groups: l.Groups, NoAffine: l.NoAffine}
	}, func(s groupNormSettings) (GroupNorm, error) {
		return GroupNorm{Groups: s.Groups, NoAffine: s.NoAffine}, nil
	})
}

var _ TorchExporter = GroupNorm{}

// TorchModule is nn.GroupNorm(Groups, C, eps=1e-05, affine=not NoAffine); its weight γ
// [C] and bias β [C] are ours as they are.
func (l GroupNorm) TorchModule(in []int) (string, error) {
	return fmt.Sprintf("nn.GroupNorm(%d, %d, eps=%g, affine=%s)", l.Groups, in[0], groupNormEps, torchBool(!l.NoAffine)), nil
}
