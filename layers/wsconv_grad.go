package layers

import (
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/num"
	G "gorgonia.org/gorgonia"
)

// wsConvGradient is WSConv2D's per-example gradient: the convolution's own kind gives
// G = ∂ℓ_i/∂Ŵ (one row of N values per filter, and the bias), and the chain rule through
// ŵ = (w − μ)·r, r = 1/sqrt(Σ(w − μ)² + ε), maps each filter's row to
//
//	∂ℓ_i/∂w = r·(G − mean(G) − ŵ·⟨G, ŵ⟩)
//
// (∂ŵ_k/∂w_j = r·(δ_kj − 1/N) − r·ŵ_k·ŵ_j). The map is linear, so it is applied to each
// example's gradient as it is formed, before its norm is taken: the norm a Workspace
// clips by is that of the gradient of the stored weight.
type wsConvGradient[T num.Float] struct {
	conv *Conv2DGradient[T]
	// what and rstd are ŵ ([OutDim × InDim], in conv's column order) and r per filter,
	// kept current by the native op's prepare; nil when raw is set.
	what, rstd []T
	// raw is w itself (Gorgonia's layout, the parameters' live values), standardised
	// per example.
	raw []T
}

var (
	_ clipping.ExampleKind[float32] = (*wsConvGradient[float32])(nil)
	_ clipping.Scatterer[float64]   = (*wsConvGradient[float64])(nil)
)

func (g *wsConvGradient[T]) NumParams() int        { return g.conv.NumParams() }
func (g *wsConvGradient[T]) Check(batch int) error { return g.conv.Check(batch) }

// Scatter is the convolution's (its InOrder; the chain rule kept the column order).
func (g *wsConvGradient[T]) Scatter(grad []T, dst []float64, overwrite bool) {
	g.conv.Scatter(grad, dst, overwrite)
}

func (g *wsConvGradient[T]) NewExampleScratch() clipping.ExampleScratch[T] {
	sc := &wsConvScratch[T]{g: g, inner: g.conv.NewExampleScratch(), what: g.what, rstd: g.rstd}
	if g.raw != nil {
		sc.what, sc.rstd = make([]T, len(g.raw)), make([]T, g.conv.OutDim)
	}
	return sc
}

type wsConvScratch[T num.Float] struct {
	g          *wsConvGradient[T]
	inner      clipping.ExampleScratch[T]
	what, rstd []T
}

func (s *wsConvScratch[T]) Example(worker, i int, grad []T) {
	s.inner.Example(worker, i, grad)
	f, k := s.g.conv.OutDim, s.g.conv.InDim
	if s.g.raw != nil {
		standardize(s.g.raw, s.what, s.rstd, f, k)
	}
	wsChain(grad, s.what, s.rstd, f, k)
}

// wsChain maps each of the f rows of k values of grad (∂ℓ/∂ŵ) to ∂ℓ/∂w in place, as
// r·(G − mean(G) − ŵ·⟨G, ŵ⟩), sums in float64: in float32 with AVX-512 or AVX2 + FMA and
// k a multiple of 8 by wsChain32AVX512 or wsChain32AVX2, the same steps with the sums in
// 16 lanes (bit for bit alike; within TestWSChainKernels' bound of this loop).
func wsChain[T num.Float](grad, what, rstd []T, f, k int) {
	if g32, ok := any(grad).([]float32); ok && useAVX2() && k%8 == 0 && f > 0 {
		kernel := wsChain32AVX512
		if !useAsm() {
			kernel = wsChain32AVX2 // bit for bit the AVX-512 kernel's sums
		}
		kernel(&g32[0], &any(what).([]float32)[0], &any(rstd).([]float32)[0], f, k)
		return
	}
	for r := range f {
		row, wh := grad[r*k:(r+1)*k], what[r*k:(r+1)*k]
		var sum, dot float64
		for j, v := range row {
			sum += float64(v)
			dot += float64(v) * float64(wh[j])
		}
		mean, rs := sum/float64(k), float64(rstd[r])
		for j, v := range row {
			row[j] = T(rs * (float64(v) - mean - float64(float64(wh[j])*dot)))
		}
	}
}

// wsConvShape binds the Gorgonia graph's tap: the convolution's, with the weight's
// value (a view of the parameters).
type wsConvShape struct {
	conv   convGradShape
	weight G.Value
}

func (s wsConvShape) NumParams() int { return s.conv.NumParams() }

func (s wsConvShape) Bind32(in, gradZ []float32) clipping.Gradient[float32] {
	return clipping.Formed[float32](&wsConvGradient[float32]{raw: rawAs[float32](s.weight),
		conv: &Conv2DGradient[float32]{In: in, GradZ: gradZ, InDim: s.conv.InDim, OutDim: s.conv.OutDim, Positions: s.conv.Positions, Bias: s.conv.Bias}})
}

func (s wsConvShape) Bind64(in, gradZ []float64) clipping.Gradient[float64] {
	return clipping.Formed[float64](&wsConvGradient[float64]{raw: rawAs[float64](s.weight),
		conv: &Conv2DGradient[float64]{In: in, GradZ: gradZ, InDim: s.conv.InDim, OutDim: s.conv.OutDim, Positions: s.conv.Positions, Bias: s.conv.Bias}})
}

// rawAs is v's data as []T: the live values when v holds T, else a converted copy (a
// binding of another dtype than the graph's, which only tests make).
func rawAs[T num.Float](v G.Value) []T {
	switch d := v.Data().(type) {
	case []T:
		return d
	case []float32:
		return num.Converted[T](d)
	case []float64:
		return num.Converted[T](d)
	}
	return nil
}
