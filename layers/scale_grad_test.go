package layers

import (
	"fmt"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
)

// scaleGradient is the test-only Scale's per-example gradient (see scale_test.go): with x
// the layer's input and dz the gradient of the summed loss at its output, row i,
//
//	∂ℓ_i/∂γ_j = x_ij·dz_ij,   ∂ℓ_i/∂β_j = dz_ij.
//
// It forms the n (or 2n) values of one example; clipping.Formed does the rest.
type scaleGradient[T num.Float] struct {
	x, dz []T // [B × n]
	n     int
	bias  bool
}

var (
	_ clipping.ExampleKind[float32]    = (*scaleGradient[float32])(nil)
	_ clipping.ExampleScratch[float64] = (*scaleGradient[float64])(nil)
	_ clipping.Shape                   = scaleShape{}
)

func (g *scaleGradient[T]) NumParams() int {
	if g.bias {
		return 2 * g.n
	}
	return g.n
}

func (g *scaleGradient[T]) Check(batch int) error {
	if want := batch * g.n; len(g.x) != want || len(g.dz) != want {
		return fmt.Errorf("%w: testscale tap has %d and %d values, want %d", clipping.ErrShape, len(g.x), len(g.dz), want)
	}
	return nil
}

// NewExampleScratch is g itself: forming an example needs no buffer.
func (g *scaleGradient[T]) NewExampleScratch() clipping.ExampleScratch[T] { return g }

func (g *scaleGradient[T]) Example(_, i int, out []T) {
	x, dz := g.x[i*g.n:(i+1)*g.n], g.dz[i*g.n:(i+1)*g.n]
	for j, d := range dz {
		out[j] = x[j] * d
	}
	if g.bias {
		copy(out[g.n:2*g.n], dz)
	}
}

// scaleShape binds the Gorgonia graph's tap (x, dZ) for either dtype.
type scaleShape struct {
	n    int
	bias bool
}

func (s scaleShape) NumParams() int {
	if s.bias {
		return 2 * s.n
	}
	return s.n
}

func (s scaleShape) Bind32(x, dz []float32) clipping.Gradient[float32] {
	return clipping.Formed[float32](&scaleGradient[float32]{x: x, dz: dz, n: s.n, bias: s.bias})
}

func (s scaleShape) Bind64(x, dz []float64) clipping.Gradient[float64] {
	return clipping.Formed[float64](&scaleGradient[float64]{x: x, dz: dz, n: s.n, bias: s.bias})
}
