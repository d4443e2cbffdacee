package layers

import (
	"fmt"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// groupNormGradient is GroupNorm's per-example gradient: with x̂ the normalised input and
// dy the gradient of the summed loss at the output, example i's gradient is
//
//	∂ℓ_i/∂γ_c = Σ_positions dy_i·x̂_i (channel c),   ∂ℓ_i/∂β_c = Σ_positions dy_i (channel c).
//
// It forms the 2C values per example (clipping.Formed does the rest), or, for the native
// engine, whose Backward forms them as a by-product of the input gradient, copies them.
type groupNormGradient[T num.Float] struct {
	xhat, dy []T // [B × C × P] (CHW)
	formed   []T // or [B × 2C], each example's gradient (the native tap)
	c, p     int
}

var (
	_ clipping.ExampleKind[float32]    = (*groupNormGradient[float32])(nil)
	_ clipping.ExampleScratch[float64] = (*groupNormGradient[float64])(nil)
	_ clipping.Shape                   = groupNormShape{}
)

func (g *groupNormGradient[T]) NumParams() int { return 2 * g.c }

func (g *groupNormGradient[T]) Check(batch int) error {
	if g.formed != nil {
		if want := batch * 2 * g.c; len(g.formed) != want {
			return fmt.Errorf("%w: groupnorm tap has %d values, want %d", clipping.ErrShape, len(g.formed), want)
		}
		return nil
	}
	if want := batch * g.c * g.p; len(g.xhat) != want || len(g.dy) != want {
		return fmt.Errorf("%w: groupnorm tap has %d and %d values, want %d", clipping.ErrShape, len(g.xhat), len(g.dy), want)
	}
	return nil
}

// NewExampleScratch is g itself: forming an example needs no buffer.
func (g *groupNormGradient[T]) NewExampleScratch() clipping.ExampleScratch[T] { return g }

func (g *groupNormGradient[T]) Example(_, i int, out []T) {
	if g.formed != nil {
		copy(out[:2*g.c], g.formed[i*2*g.c:(i+1)*2*g.c])
		return
	}
	size := g.c * g.p
	xh, dy := g.xhat[i*size:(i+1)*size], g.dy[i*size:(i+1)*size]
	dgamma, dbeta := out[:g.c], out[g.c:2*g.c]
	for ch := range g.c {
		var sg, sb T
		for q, v := range dy[ch*g.p : (ch+1)*g.p] {
			sg += v * xh[ch*g.p+q]
			sb += v
		}
		dgamma[ch], dbeta[ch] = sg, sb
	}
}

// groupNormShape binds the Gorgonia graph's x̂ and dy (CHW) for either dtype.
type groupNormShape struct{ c, p int }

func (s groupNormShape) NumParams() int { return 2 * s.c }

func (s groupNormShape) Bind32(xhat, dy []float32) clipping.Gradient[float32] {
	return clipping.Formed[float32](&groupNormGradient[float32]{xhat: xhat, dy: dy, c: s.c, p: s.p})
}

func (s groupNormShape) Bind64(xhat, dy []float64) clipping.Gradient[float64] {
	return clipping.Formed[float64](&groupNormGradient[float64]{xhat: xhat, dy: dy, c: s.c, p: s.p})
}
