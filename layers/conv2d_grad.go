package layers

import (
	"fmt"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// Conv2DGradient is Conv2D's per-example gradient kind, of a convolution computed as
// Z_i = W·U_iᵀ + b, with W of shape [OutDim, InDim] (InDim = channels·kh·kw) and U_i the
// example's im2col'd input, one row of InDim values per output position. Example i's gradient is dZ_i·U_i for W
// (row-major [OutDim × InDim]) and Σ_p dZ_i[:, p] for b. It is a Formed kind: a chunk's
// gradients are formed (one small GEMM each) in per-worker scratch, their norms taken,
// and their clipped sum added with one more GEMM; no [B × NumParams] matrix is held.
//
// By default the layout is Gorgonia's (GradZ channels first, In's columns in the weight's
// order). The native engine's NHWC layout sets PositionsMajor and InOrder, and rebuilds
// patches on demand (Patches) instead of keeping In for the whole batch.
type Conv2DGradient[T num.Float] struct {
	// In is U, [B × Positions × InDim]; nil when Patches stands in for it.
	In []T
	// GradZ is ∂loss/∂Z, [B × OutDim × Positions] ([B × Positions × OutDim] with
	// PositionsMajor).
	GradZ                    []T
	InDim, OutDim, Positions int
	// Bias says whether the layer has a bias of OutDim entries after its weight.
	Bias bool
	// PositionsMajor says GradZ is [B × Positions × OutDim] (as an NHWC activation).
	PositionsMajor bool
	// InOrder, when not nil, says column j of In (of the InDim values per position) is
	// multiplied by weight column InOrder[j]: a permutation of 0…InDim−1.
	InOrder []int
	// Patches, when not nil, returns example i's im2col'd input, [Positions × InDim] in
	// In's order, from a cache of its own or built into buf (which has room for it).
	// worker is as in Scratch; it is called concurrently for different workers.
	Patches func(worker, i int, buf []T) []T

	// wino, when not nil, forms an example's weight gradient (Example) by F(2×2, 3×3)
	// (winograd_grad.go) from input(i), its NHWC input, instead of the product on its
	// patches: the native engine's convolutions whose forward is Winograd's. AddExample (plain
	// sums) keeps the product.
	wino  *winoGrad[T]
	input func(i int) []T
}

var _ clipping.ExampleKind[float32] = (*Conv2DGradient[float32])(nil)

// convGradShape is a Conv2DGradient (Gorgonia's layout) before it is bound to buffers.
type convGradShape struct {
	InDim, OutDim, Positions int
	Bias                     bool
}

var _ clipping.Shape = convGradShape{}

// NumParams is InDim·OutDim, plus OutDim with a bias.
func (s convGradShape) NumParams() int {
	return (&Conv2DGradient[float32]{InDim: s.InDim, OutDim: s.OutDim, Bias: s.Bias}).NumParams()
}

// Bind32 is the Conv2DGradient of float32 buffers.
func (s convGradShape) Bind32(in, gradZ []float32) clipping.Gradient[float32] {
	return clipping.Formed[float32](&Conv2DGradient[float32]{In: in, GradZ: gradZ, InDim: s.InDim, OutDim: s.OutDim, Positions: s.Positions, Bias: s.Bias})
}

// Bind64 is the Conv2DGradient of float64 buffers.
func (s convGradShape) Bind64(in, gradZ []float64) clipping.Gradient[float64] {
	return clipping.Formed[float64](&Conv2DGradient[float64]{In: in, GradZ: gradZ, InDim: s.InDim, OutDim: s.OutDim, Positions: s.Positions, Bias: s.Bias})
}

// NumParams is InDim·OutDim, plus OutDim with a bias.
func (t *Conv2DGradient[T]) NumParams() int {
	n := t.InDim * t.OutDim
	if t.Bias {
		n += t.OutDim
	}
	return n
}

// Check checks the buffers hold batch examples and InOrder is a permutation.
func (t *Conv2DGradient[T]) Check(batch int) error {
	if t.InDim <= 0 || t.OutDim <= 0 || t.Positions <= 0 {
		return fmt.Errorf("%w: conv gradient with InDim %d, OutDim %d, Positions %d", clipping.ErrShape, t.InDim, t.OutDim, t.Positions)
	}
	if t.Patches == nil || t.In != nil {
		if err := checkLen("conv", "input", t.In, batch*t.Positions*t.InDim); err != nil {
			return err
		}
	}
	if err := checkLen("conv", "gradient", t.GradZ, batch*t.OutDim*t.Positions); err != nil {
		return err
	}
	return checkOrder("conv", t.InOrder, t.InDim)
}

// NewExampleScratch holds a row of ones (bias sums) and room for one example's patches.
func (t *Conv2DGradient[T]) NewExampleScratch() clipping.ExampleScratch[T] {
	sc := &convScratch[T]{t: t, ones: make([]T, t.Positions)}
	for j := range sc.ones {
		sc.ones[j] = 1
	}
	if t.Patches != nil {
		sc.patches = make([]T, t.Positions*t.InDim)
	}
	if t.wino != nil {
		sc.wbuf = make([]T, t.wino.scratch())
	}
	return sc
}

// Scatter maps weight columns back through InOrder.
func (t *Conv2DGradient[T]) Scatter(g []T, dst []float64, overwrite bool) {
	if t.InOrder == nil {
		clipping.Scatter(g, dst, overwrite)
		return
	}
	k, F := t.InDim, t.OutDim
	for f := range F {
		row, out := g[f*k:(f+1)*k], dst[f*k:(f+1)*k]
		for j, v := range row {
			if overwrite {
				out[t.InOrder[j]] = float64(v)
			} else {
				out[t.InOrder[j]] += float64(v)
			}
		}
	}
	clipping.Scatter(g[k*F:], dst[k*F:], overwrite)
}

type convScratch[T num.Float] struct {
	t       *Conv2DGradient[T]
	ones    []T
	patches []T
	wbuf    []T // Winograd's scratch (wino)
}

// patchesOf is example i's im2col'd input: a slice of In, or from Patches.
func (s *convScratch[T]) patchesOf(worker, i int) []T {
	t := s.t
	n := t.Positions * t.InDim
	if t.Patches != nil {
		u := t.Patches(worker, i, s.patches[:n])
		if len(u) != n {
			panic(fmt.Sprintf("layers: Patches returned %d values, want %d", len(u), n))
		}
		return u
	}
	return t.In[i*n : (i+1)*n]
}

// gemms computes (flags 0) or adds (gemm.Accumulate) example i's gradient into g.
func (s *convScratch[T]) gemms(worker, i int, g []T, f gemm.Flags) {
	t := s.t
	F, k, P := t.OutDim, t.InDim, t.Positions
	dz := t.GradZ[i*F*P : (i+1)*F*P]
	if t.wino != nil && f == 0 {
		t.wino.example(t.input(i), dz, g, s.wbuf)
	} else {
		// Weight: dZ_i [F × P] · U_i [P × k], dZ_i stored [P × F] when PositionsMajor.
		a := gemm.Matrix[T]{Data: dz, Stride: P}
		if t.PositionsMajor {
			a = gemm.Matrix[T]{Data: dz, Stride: F, ColMajor: true}
		}
		gemm.Gemm(F, k, P, a, s.patchesOf(worker, i), k, g, k, nil, f)
	}
	if !t.Bias {
		return
	}
	b := g[F*k : F*k+F]
	if t.PositionsMajor {
		gemm.Gemm(1, F, P, gemm.Matrix[T]{Data: s.ones, Stride: P}, dz, F, b, F, nil, f)
	} else {
		gemm.Gemm(F, 1, P, gemm.Matrix[T]{Data: dz, Stride: P}, s.ones, 1, b, 1, nil, f)
	}
}

func (s *convScratch[T]) Example(worker, i int, g []T) { s.gemms(worker, i, g, 0) }

func (s *convScratch[T]) AddExample(worker, i int, acc []T) { s.gemms(worker, i, acc, gemm.Accumulate) }
