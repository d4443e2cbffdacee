package layers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// LayerNorm is a test-only parametrised layer with a native kernel, written as a newcomer
// would add one, so that layertest_test.go can plant the two mistakes an independent
// review made in such a layer and show that layertest.Check, the one test a new layer
// needs, catches each (issue 39):
//
//   - Bug "no-mean-g": the native input gradient without its −mean(g) term;
//   - Bug "stale-rows": the per-example gradient rows accumulated (row[j] += …) without
//     being cleared between Backward calls, which mixes examples' gradients into one
//     clipped vector.
//
// It normalises a flat input over its n features, per example: x̂ = (x − μ)/sqrt(σ² + ε),
// y = γ ⊙ x̂ + β (γ at ones, β at zeros). Its Gorgonia fragment is the reference; its tap
// is (x̂, y), whose per-example gradient is Scale's with a bias (∂ℓ_i/∂γ = x̂_i ⊙ dy_i,
// ∂ℓ_i/∂β = dy_i).
type LayerNorm struct {
	Bug string // "", "no-mean-g" or "stale-rows": a mistake planted in the native code
}

const layerNormEps = 1e-5

func (LayerNorm) Kind() string { return "testlayernorm" }

func (LayerNorm) OutputShape(in []int) ([]int, error) {
	if len(in) != 1 || in[0] < 2 {
		return nil, fmt.Errorf("testlayernorm: input shape %v is not flat with at least 2 features", in)
	}
	return in, nil
}

func (LayerNorm) Params(in []int) []ParamSpec {
	n := in[0]
	return []ParamSpec{
		{Name: "weight", Shape: []int{n}, NodeShape: []int{1, n}, Init: Ones{}, FanIn: 1, FanOut: 1},
		{Name: "bias", Shape: []int{n}, NodeShape: []int{1, n}, Init: Zeros{}, FanIn: 1, FanOut: 1},
	}
}

func (LayerNorm) Apply(x *G.Node, params []*G.Node) (*G.Node, *Tap, error) {
	s := x.Shape()
	b, n := s[0], s[1]
	filled := func(r, q int, v float64) *G.Node {
		return constMatrix(x, fmt.Sprintf("testlayernorm_%g", v), r, q, constant(v))
	}
	colMean, rowOnes := filled(n, 1, 1/float64(n)), filled(1, n, 1)
	mean, err := G.Mul(x, colMean)
	if err != nil {
		return nil, nil, err
	}
	spread, err := G.Mul(mean, rowOnes)
	if err != nil {
		return nil, nil, err
	}
	xc, err := G.Sub(x, spread)
	if err != nil {
		return nil, nil, err
	}
	xhat, err := divideBySD(xc, colMean, filled(b, 1, layerNormEps), rowOnes)
	if err != nil {
		return nil, nil, err
	}
	z, err := G.BroadcastHadamardProd(xhat, params[0], nil, []byte{0})
	if err != nil {
		return nil, nil, err
	}
	if z, err = G.BroadcastAdd(z, params[1], nil, []byte{0}); err != nil {
		return nil, nil, err
	}
	return z, &Tap{In: xhat, Z: z, Shape: scaleShape{n: n, bias: true}}, nil
}

func (l LayerNorm) compileNative(c nativeCompiler) error {
	return compileAs(c, l, compileLayerNorm[float32], compileLayerNorm[float64])
}

func compileLayerNorm[T num.Float](c *compiler[T], l LayerNorm) error {
	if c.cur.image {
		return fmt.Errorf("layers: testlayernorm on a %v; put a Flatten before it", c.cur)
	}
	n := c.cur.n
	o := &layerNormOp[T]{n: n, gamma: c.params[0], beta: c.params[1], bug: l.Bug,
		xhat: make([]T, c.batch*n), rstd: make([]T, c.batch)}
	if c.train {
		o.rows = make([]T, c.batch*2*n)
	}
	c.add(o, c.cur, false)
	return nil
}

// layerNormOp keeps x̂ and 1/sqrt(σ² + ε) per row (batch-sized, for simplicity) and forms
// each row's 2n per-example values in backward (the tap). With g = dy ⊙ γ,
//
//	dx = (g − mean(g) − x̂·mean(g ⊙ x̂)) / sqrt(σ² + ε).
type layerNormOp[T num.Float] struct {
	n           int
	gamma, beta []T
	bug         string
	xhat, rstd  []T // [B × n], [B]
	rows        []T // [B × 2n]: ∂ℓ_i/∂γ, ∂ℓ_i/∂β per row
}

func (o *layerNormOp[T]) alias() bool             { return false }
func (o *layerNormOp[T]) prepare()                {}
func (o *layerNormOp[T]) scratchSize() (int, int) { return 0, 0 }

func (o *layerNormOp[T]) forward(_ *nativeScratch[T], _ int, in, out []T, rows, lo int) {
	n := o.n
	for e := range rows {
		x, y := in[e*n:(e+1)*n], out[e*n:(e+1)*n]
		xh := o.xhat[(lo+e)*n : (lo+e+1)*n]
		var mu, v float64
		for _, a := range x {
			mu += float64(a)
		}
		mu /= float64(n)
		for _, a := range x {
			v += (float64(a) - mu) * (float64(a) - mu)
		}
		r := 1 / math.Sqrt(v/float64(n)+layerNormEps)
		o.rstd[lo+e] = T(r)
		for j, a := range x {
			xh[j] = T((float64(a) - mu) * r)
			y[j] = o.gamma[j]*xh[j] + o.beta[j]
		}
	}
}

func (o *layerNormOp[T]) backward(_ *nativeScratch[T], _ int, _, _, gOut, gIn []T, rows, lo int) {
	n := o.n
	for e := range rows {
		dy := gOut[e*n : (e+1)*n]
		xh := o.xhat[(lo+e)*n : (lo+e+1)*n]
		row := o.rows[(lo+e)*2*n : (lo+e+1)*2*n]
		if o.bug != "stale-rows" {
			clear(row)
		}
		for j, d := range dy {
			row[j] += d * xh[j]
			row[n+j] += d
		}
		if gIn == nil {
			continue
		}
		var mg, mgx float64
		for j, d := range dy {
			g := float64(d * o.gamma[j])
			mg += g
			mgx += g * float64(xh[j])
		}
		mg /= float64(n)
		mgx /= float64(n)
		if o.bug == "no-mean-g" {
			mg = 0
		}
		r := float64(o.rstd[lo+e])
		for j, d := range dy {
			g := float64(d * o.gamma[j])
			gIn[e*n+j] = T((g - mg - float64(xh[j])*mgx) * r)
		}
	}
}

func (o *layerNormOp[T]) gradient(*Native[T], int) clipping.Gradient[T] {
	return clipping.Formed[T](&rowsGradient[T]{rows: o.rows, k: 2 * o.n})
}

func (o *layerNormOp[T]) tapRow() int { return 2 * o.n }

// rowsGradient is a kind whose per-example gradients the op formed in Backward: row i of
// rows.
type rowsGradient[T num.Float] struct {
	rows []T
	k    int
}

func (g *rowsGradient[T]) NumParams() int { return g.k }

func (g *rowsGradient[T]) Check(batch int) error {
	if len(g.rows) != batch*g.k {
		return fmt.Errorf("%w: testlayernorm tap has %d values, want %d", clipping.ErrShape, len(g.rows), batch*g.k)
	}
	return nil
}

func (g *rowsGradient[T]) NewExampleScratch() clipping.ExampleScratch[T] { return g }

func (g *rowsGradient[T]) Example(_, i int, out []T) { copy(out, g.rows[i*g.k:(i+1)*g.k]) }
