package layers

import (
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// The per-example weight gradient of a convolution whose forward product is Winograd's
// (winograd.go), by F(2×2, 3×3) run backwards (Lavin & Gray 2016, section 4: the same
// algorithm computes a filter's gradient). For a 2×2 block of outputs on the 4×4 input
// tile d under it, the forward is Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A, linear in the filter g, so
// the gradient of Σ dY ⊙ Y with respect to g is
//
//	dg = Gᵀ [(A dY Aᵀ) ⊙ (Bᵀ d B)] G,
//
// summed over the blocks. Per example, channel c and filter f that is
// Gᵀ M[c, f] G with M_ξ = Σ_tiles V_ξ[tile, c]·Ŷ_ξ[tile, f] for the 16 transformed positions
// ξ: 16 products of K = tiles (16 on the scatter CNN's 8×8 outputs), 2.25× fewer
// multiply-adds than the direct dZᵢᵀ·Uᵢ over 9·C patch columns, and no patches to build.
// F(2×2, 3×3)'s constants are 0, ±1 and ±½, exact in binary floating point, and its
// transforms add at most 4 terms, so its rounding is close to the direct product's
// (TestWinogradGradient's bound); the larger F(4×4, 3×3) would take 4× fewer products but
// 36 → 9 output transforms per channel and filter, and a sum over only 4 tiles.
//
// The 16 products and the output gradient's transform run on internal/gemm, on every CPU
// path; the input and output transforms are additions, subtractions and halvings only,
// done by AVX2 kernels on the amd64 paths (winograd_amd64.s) and Go elsewhere, bit for bit
// alike. The gradient is formed per example and then clipped like any other formed
// gradient: its norm is taken from the values that are summed, so clipping bounds exactly
// what is added whatever the rounding (clipping.Workspace).

// The F(2, 3) transforms (Lavin & Gray, section 4.1, interpolation points 0, ±1, ∞).
var (
	wino2BT = [][]float64{
		{1, 0, -1, 0},
		{0, 1, 1, 0},
		{0, -1, 1, 0},
		{0, 1, 0, -1},
	}
	wino2G = [][]float64{
		{1, 0, 0},
		{0.5, 0.5, 0.5},
		{0.5, -0.5, 0.5},
		{0, 0, 1},
	}
	wino2AT = [][]float64{
		{1, 1, 1, 0},
		{0, 1, -1, -1},
	}
)

// winoGrad is the F(2×2, 3×3) weight gradient's geometry for one convolution (3×3, stride
// 1, padding ph, pw) of h×w×c NHWC images into oh×ow×f.
type winoGrad[T num.Float] struct {
	h, w, c, f, ph, pw, oh, ow int
	ty, tx, tiles              int // tile rows and columns (2×2 outputs each), their product
	bt, a, gt                  []T // Bᵀ (4×4), A (4×2), Gᵀ (3×4), row-major
}

func newWinoGrad[T num.Float](o *convOp[T]) *winoGrad[T] {
	ty, tx := (o.oh+1)/2, (o.ow+1)/2
	wg := &winoGrad[T]{h: o.h, w: o.w, c: o.c, f: o.f, ph: o.ph, pw: o.pw, oh: o.oh, ow: o.ow,
		ty: ty, tx: tx, tiles: ty * tx, bt: flat[T](wino2BT)}
	for i := range 4 {
		for j := range 2 {
			wg.a = append(wg.a, T(wino2AT[j][i]))
		}
	}
	for i := range 3 {
		for j := range 4 {
			wg.gt = append(wg.gt, T(wino2G[j][i]))
		}
	}
	return wg
}

// scratch is the values example needs: the input zero-padded to whole tiles, its tiles'
// transform (16·tiles·C), the output gradient's 2×2 blocks, the first pass of their
// transform and the transform ((4 + 8 + 16)·tiles·F), and the 16 products (16·F·C).
func (wg *winoGrad[T]) scratch() int {
	t := wg.tiles
	return wg.padded() + 16*t*wg.c + 28*t*wg.f + 16*wg.f*wg.c
}

// padded is the size of the zero-padded input: (2·ty + 2) × (2·tx + 2) pixels of C.
func (wg *winoGrad[T]) padded() int { return (2*wg.ty + 2) * (2*wg.tx + 2) * wg.c }

// example writes one example's weight gradient into g, [F × 9·C] with the 9·C columns in
// the patches' order (kh, kw, channel), from its NHWC input x (h·w·c values) and its output
// gradient dz ([oh·ow × F], positions major), using buf (scratch() values).
func (wg *winoGrad[T]) example(x, dz, g, buf []T) {
	c, f, t := wg.c, wg.f, wg.tiles
	tc, tf, fc := t*c, t*f, f*c
	pw := 2*wg.tx + 2
	xp, buf := buf[:wg.padded()], buf[wg.padded():]
	v, buf := buf[:16*tc], buf[16*tc:]
	e, q, yh, buf := buf[:4*tf], buf[4*tf:12*tf], buf[12*tf:28*tf], buf[28*tf:]
	m := buf[:16*fc]
	// xp: the image at (ph, pw) in a zero frame that every tile fits in.
	clear(xp)
	for iy := range wg.h {
		copy(xp[((iy+wg.ph)*pw+wg.pw)*c:], x[iy*wg.w*c:(iy+1)*wg.w*c])
	}
	// v[ξ][tile][channel] = Bᵀ·d·B of each 4×4 tile d (stride 2).
	for ty := range wg.ty {
		for tx := range wg.tx {
			winoIn2(xp[(2*ty*pw+2*tx)*c:], v[(ty*wg.tx+tx)*c:], pw*c, c, tc, c)
		}
	}
	// e[(a, b)][tile][filter]: the 2×2 blocks of dZ, zero outside the output.
	gatherTiles(e, dz, wg.oh, wg.ow, f, wg.ty, wg.tx, 2, 2, 0, 0, t, 0)
	// Ŷ = A·e·Aᵀ in two passes (A's entries are 0 and ±1: each value is one rounded sum of
	// two, on every path): yh[ξ][tile][filter].
	am := gemm.Matrix[T]{Data: wg.a, Stride: 2}
	gemm.Gemm(4, 2*tf, 2, am, e, 2*tf, q, 2*tf, nil, 0)
	for r := range 4 {
		gemm.Gemm(4, tf, 2, am, q[r*2*tf:], tf, yh[r*4*tf:], tf, nil, 0)
	}
	// m[ξ][filter][channel] = Σ_tile Ŷ_ξ[tile][filter]·v_ξ[tile][channel].
	for xi := range 16 {
		gemm.Gemm(f, c, t, gemm.Matrix[T]{Data: yh[xi*tf:], Stride: f, ColMajor: true}, v[xi*tc:], c, m[xi*fc:], c, nil, 0)
	}
	// g[filter][(a, b)][channel] = (Gᵀ·m·G)[a][b].
	for fo := range f {
		winoOut2(m[fo*c:], g[fo*9*c:], fc, c, c)
	}
}

// winoIn2 writes v[ξ·plane + ch] = (Bᵀ·d·B)[ξ] for ch < n, d[i][j] = x[i·rs + j·cs + ch]:
// the AVX2 kernel on whole vectors where the path has it, winoIn2Go on the rest.
func winoIn2[T num.Float](x, v []T, rs, cs, plane, n int) {
	done := 0
	if x32, ok := any(x).([]float32); ok && useAVX2() && n >= 8 {
		done = n &^ 7
		_ = x32[3*rs+3*cs+done-1]
		v32 := any(v).([]float32)
		_ = v32[15*plane+done-1]
		winoIn2AVX2(&x32[0], &v32[0], rs, cs, plane, done)
	}
	if done < n {
		winoIn2Go(x[done:], v[done:], rs, cs, plane, n-done)
	}
}

// winoIn2Go is winoIn2 in Go. Bᵀ's entries are 0 and ±1: each value is a difference or sum
// of two, then of two of those, so the kernels agree with it bit for bit.
func winoIn2Go[T num.Float](x, v []T, rs, cs, plane, n int) {
	for ch := range n {
		var d, tt [4][4]T
		for i := range 4 {
			for j := range 4 {
				d[i][j] = x[i*rs+j*cs+ch]
			}
		}
		for j := range 4 {
			tt[0][j] = d[0][j] - d[2][j]
			tt[1][j] = d[1][j] + d[2][j]
			tt[2][j] = d[2][j] - d[1][j]
			tt[3][j] = d[1][j] - d[3][j]
		}
		for r := range 4 {
			v[(4*r+0)*plane+ch] = tt[r][0] - tt[r][2]
			v[(4*r+1)*plane+ch] = tt[r][1] + tt[r][2]
			v[(4*r+2)*plane+ch] = tt[r][2] - tt[r][1]
			v[(4*r+3)*plane+ch] = tt[r][1] - tt[r][3]
		}
	}
}

// winoOut2 writes g[(3a + b)·gs + ch] = (Gᵀ·M·G)[a][b] for ch < n, M[r][s] = m[(4r + s)·plane
// + ch]: the AVX2 kernel on whole vectors where the path has it, winoOut2Go on the rest.
func winoOut2[T num.Float](m, g []T, plane, gs, n int) {
	done := 0
	if m32, ok := any(m).([]float32); ok && useAVX2() && n >= 8 {
		done = n &^ 7
		_ = m32[15*plane+done-1]
		g32 := any(g).([]float32)
		_ = g32[8*gs+done-1]
		winoOut2AVX2(&m32[0], &g32[0], plane, gs, done)
	}
	if done < n {
		winoOut2Go(m[done:], g[done:], plane, gs, n-done)
	}
}

// winoOut2Go is winoOut2 in Go. Gᵀ's entries are 0, ±½ and 1: sums of two, halved (exact
// but for subnormals; the conversions keep the compiler from fusing a halving into the
// next addition, which arm64 would), then added to a third.
func winoOut2Go[T num.Float](m, g []T, plane, gs, n int) {
	for ch := range n {
		var w [3][4]T
		for s := range 4 {
			m0, m1, m2, m3 := m[s*plane+ch], m[(4+s)*plane+ch], m[(8+s)*plane+ch], m[(12+s)*plane+ch]
			p, q := m1+m2, m1-m2
			w[1][s] = T(q * 0.5)
			hp := T(p * 0.5)
			w[0][s] = m0 + hp
			w[2][s] = hp + m3
		}
		for a := range 3 {
			p, q := w[a][1]+w[a][2], w[a][1]-w[a][2]
			hp := T(p * 0.5)
			g[(3*a+0)*gs+ch] = w[a][0] + hp
			g[(3*a+1)*gs+ch] = T(q * 0.5)
			g[(3*a+2)*gs+ch] = hp + w[a][3]
		}
	}
}
