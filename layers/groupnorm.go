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
	filled := func(r, q int, v float64) *G.Node {
		return constMatrix(x, fmt.Sprintf("groupnorm_%g", v), r, q, constant(v))
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
		xhat, err = divideBySD(xc, colMean, eps, rowOnes)
		return err
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
		o.gamma, o.beta = make([]T, cur.c), make([]T, cur.c)
		for j := range o.gamma {
			o.gamma[j] = 1
		}
		c.add(o, cur, false)
		return nil
	}
	o.gamma, o.beta, o.affine = c.params[0], c.params[1], true
	// A ReLU after it is applied as y is written, and its gradient masks dy (a separate
	// pass over the activation each way was as slow as the normalisation).
	if f, ok := c.next().(fusedActivation); ok {
		if act, self := f.fusedAct(); act == actReLU && own(c.next(), self) {
			c.i++
			o.relu = true
		}
	}
	if c.train {
		o.formed = make([]T, c.batch*2*cur.c)
	}
	c.add(&groupNormTapOp[T]{o}, cur, false)
	return nil
}

// groupNormOp is GroupNorm on NHWC images (channel innermost, so a group is a run of
// C/Groups values at each position). Forward keeps x̂ and each group's 1/sqrt(σ² + ε) in
// scratch for Backward. The loops (groupnorm_kernels.go) run over contiguous channels
// with per-channel constants: forward sums each channel (Σx, and in float32 Σx² in the
// same pass; float64 takes a second, centred pass), adds the sums of a group's channels,
// and writes x̂ and y = γ·x̂ + β in one pass. Backward, with g = dy·γ and means over the
// group:
//
//	dx = (g − mean(g) − x̂·mean(g·x̂)) / sqrt(σ² + ε),
//
// from the per-channel sums Σdy and Σdy·x̂, which are also the example's gradient
// (∂ℓ/∂β_c, ∂ℓ/∂γ_c): Backward keeps those 2C values per row as the tap, not x̂ and dy.
// A ReLU right after a GroupNorm with γ and β is fused: forward clamps y as it writes it,
// backward reads dy as 0 where y is not positive.
//
// In float32 the variance is E[x²] − μ² from float64 sums of exact float32 squares: its
// error is about 1e-16·(1 + μ²/σ²) relative, far below float32's 6e-8 unless the mean
// is 10⁴ standard deviations from zero.
type groupNormOp[T num.Float] struct {
	c, p, groups int
	gamma, beta  []T  // views [C] (ones and zeros without affine)
	affine       bool // gamma and beta are parameters
	relu         bool // a ReLU follows, fused: y is max(0, γ·x̂ + β)
	formed       []T  // batch-sized per-example gradients [B × 2C] (the tap), or nil
}

func (o *groupNormOp[T]) alias() bool { return false }
func (o *groupNormOp[T]) prepare()    {}

// scratchSize is x̂ and the groups' 1/sqrt(σ² + ε) per row.
func (o *groupNormOp[T]) scratchSize() (int, int) { return o.c*o.p + o.groups, 0 }

// wideScratch is 8 per-channel float64 buffers (two of them double-length).
func (o *groupNormOp[T]) wideScratch() int { return 10 * o.c }

// buffers are x̂ and 1/sqrt(σ² + ε) of n rows.
func (o *groupNormOp[T]) buffers(sc *nativeScratch[T], k, n int) (xhat, rstd []T) {
	f := sc.floats[k]
	return f[n*o.groups : n*o.groups+n*o.c*o.p], f[:n*o.groups]
}

func (o *groupNormOp[T]) forward(sc *nativeScratch[T], k int, in, out []T, n, _ int) {
	size, cg, c := o.c*o.p, o.c/o.groups, o.c
	xhat, rstd := o.buffers(sc, k, n)
	w := sc.wide[k]
	s, sq, mean, r := w[:2*c], w[2*c:4*c], w[4*c:5*c], w[5*c:6*c]
	single := num.SizeOf[T]() == 4
	cnt := float64(cg * o.p)
	for e := range n {
		x, xh, y := in[e*size:(e+1)*size], xhat[e*size:(e+1)*size], out[e*size:(e+1)*size]
		gnSums(x, x, nil, o.p, c, s, sq)
		for g := range o.groups {
			var sum float64
			for _, v := range s[g*cg : (g+1)*cg] {
				sum += v
			}
			for j := g * cg; j < (g+1)*cg; j++ {
				mean[j] = sum / cnt
			}
		}
		if !single {
			gnCentered(x, o.p, c, mean, sq)
		}
		for g := range o.groups {
			var ss float64
			for _, v := range sq[g*cg : (g+1)*cg] {
				ss += v
			}
			v := ss / cnt
			if single {
				m := mean[g*cg]
				v = max(0, v-m*m)
			}
			rv := 1 / math.Sqrt(v+groupNormEps)
			rstd[e*o.groups+g] = T(rv)
			for j := g * cg; j < (g+1)*cg; j++ {
				r[j] = rv
			}
		}
		gnNormalize(x, xh, y, o.p, c, mean, r, o.gamma, o.beta, o.relu)
	}
}

func (o *groupNormOp[T]) backward(sc *nativeScratch[T], k int, _, out, gOut, gIn []T, n, lo int) {
	if gIn == nil && o.formed == nil {
		return
	}
	size, cg, c := o.c*o.p, o.c/o.groups, o.c
	xhat, rstd := o.buffers(sc, k, n)
	w := sc.wide[k]
	sg, sgx, gain := w[:2*c], w[2*c:4*c], w[4*c:5*c]
	mg, mgx, r := w[5*c:6*c], w[6*c:7*c], w[7*c:8*c]
	for j, v := range o.gamma {
		gain[j] = float64(v)
	}
	cnt := float64(cg * o.p)
	for e := range n {
		dy, xh := gOut[e*size:(e+1)*size], xhat[e*size:(e+1)*size]
		var mask []T // the fused ReLU's output: dy counts where it is > 0
		if o.relu {
			mask = out[e*size : (e+1)*size]
		}
		gnSums(dy, xh, mask, o.p, c, sg, sgx)
		if o.formed != nil {
			row := o.formed[(lo+e)*2*c : (lo+e+1)*2*c]
			for j := range c {
				row[j], row[c+j] = T(sgx[j]), T(sg[j])
			}
		}
		if gIn == nil {
			continue
		}
		for g := range o.groups {
			var s1, s2 float64
			for j := g * cg; j < (g+1)*cg; j++ {
				s1 += gain[j] * sg[j]
				s2 += gain[j] * sgx[j]
			}
			rv := float64(rstd[e*o.groups+g])
			for j := g * cg; j < (g+1)*cg; j++ {
				mg[j], mgx[j], r[j] = s1/cnt, s2/cnt, rv
			}
		}
		gnInputGrad(dy, xh, mask, gIn[e*size:(e+1)*size], o.p, c, gain, mg, mgx, r)
	}
}

// groupNormTapOp is a GroupNorm with γ and β: its tap is each row's gradient, formed in
// Backward.
type groupNormTapOp[T num.Float] struct{ *groupNormOp[T] }

func (o *groupNormTapOp[T]) gradient(*Native[T], int) clipping.Gradient[T] {
	return clipping.Formed[T](&groupNormGradient[T]{formed: o.formed, c: o.c, p: o.p})
}

func (o *groupNormTapOp[T]) tapRow() int { return 2 * o.c }

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
