package layers

import (
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/parallel"
)

// Winograd's minimal filtering F(4×4, 3×3) (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", CVPR 2016) for the forward product of a float32 3×3,
// stride-1 convolution: each 4×4 block of outputs is
//
//	Y = Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A
//
// from the 6×6 input tile d under it and the 3×3 filter g, 36 multiplications where the
// direct product takes 144: per 36 transformed positions ξ, one product of the tiles'
// transformed inputs [tiles × C] by the transformed weight [C × F], 4× fewer
// floating-point operations than im2col's product. The three transforms are linear maps on
// a tile's 36 (or 9, or 16) values, and are done as products too, on internal/gemm's
// kernels: the input's and the output's in two passes (Bᵀ on the tile's rows, then on its
// columns: 2·(6·6·6 + 6·6·6) operations per tile and channel instead of the Kronecker
// matrix's 2·36·36), the weight's, once per step, by G⊗G (36×9). So every CPU path
// (AVX-512, AVX2, NEON, pure Go) runs the same algorithm on the kernels it already has and
// is checked by their path tests.
//
// The backward pass keeps the direct product for dU = dZ·Wp; the per-example weight
// gradients are formed by F(2×2, 3×3) (winograd_grad.go) from the input itself, no patches
// built. Both are the gradient of the convolution at the forward's activations, which
// differ from the direct forward's by float32 rounding (see TestWinogradForward and
// TestWinogradGradient for the bounds). Clipping bounds whatever vector is clipped: the
// norm is taken of the formed gradient that is then summed, so this changes no privacy
// guarantee.

// winogradMinChannels is the fewest input channels for which a convolution uses F(4×4,
// 3×3): the input transform costs 2·(216 + 216) operations per tile and channel, the
// product saves 2·(144 − 36)·F per tile and channel, and the gathered tiles replace a
// 9-fold im2col copy. It pays on the scatter CNN's 243 channels (docs/performance.md:
// 1.15–1.2× its private step on the AVX2 and AVX-512 paths); the built-in models'
// narrower 3×3 convolutions (at most 128 input channels) keep the direct product until
// they are measured with this one.
const winogradMinChannels = 192

// winogradMaxWeight bounds the transformed weight, 36·C·F values (4× the layer's own
// weight): the residual networks' 256→256 convolutions (9.4 MB each) gained 3–5 % on
// WRN-16-4 and nothing measurable on resnet-klause, and would have added 50 MB to a model
// held to 1 GB (issue 38), so they keep the direct product.
const winogradMaxWeight = 4 << 20

// The transforms' matrices (Lavin & Gray, section 4.2, F(4, 3) with interpolation points
// 0, ±1, ±2 and ∞).
var (
	winoBT = [][]float64{
		{4, 0, -5, 0, 1, 0},
		{0, -4, -4, 1, 1, 0},
		{0, 4, -4, -1, 1, 0},
		{0, -2, -1, 2, 1, 0},
		{0, 2, -1, -2, 1, 0},
		{0, 4, 0, -5, 0, 1},
	}
	winoG = [][]float64{
		{1.0 / 4, 0, 0},
		{-1.0 / 6, -1.0 / 6, -1.0 / 6},
		{-1.0 / 6, 1.0 / 6, -1.0 / 6},
		{1.0 / 24, 1.0 / 12, 1.0 / 6},
		{1.0 / 24, -1.0 / 12, 1.0 / 6},
		{0, 0, 1},
	}
	winoAT = [][]float64{
		{1, 1, 1, 1, 1, 0},
		{0, 1, -1, 2, -2, 0},
		{0, 1, 1, 4, 4, 0},
		{0, 1, -1, 8, -8, 1},
	}
)

// kron is the row-major Kronecker product a⊗a of an r×c matrix a with itself, (r·r)×(c·c):
// element ((i, j), (k, l)) is a[i][k]·a[j][l], the map of X ↦ a·X·aᵀ on row-major X.
func kron[T num.Float](a [][]float64) []T {
	r, c := len(a), len(a[0])
	out := make([]T, r*r*c*c)
	for i := range r {
		for j := range r {
			for k := range c {
				for l := range c {
					out[(i*r+j)*c*c+k*c+l] = T(a[i][k] * a[j][l])
				}
			}
		}
	}
	return out
}

// winograd is a convolution's F(4×4, 3×3) state: the tile grid and the transformed weight.
type winograd[T num.Float] struct {
	ty, tx, tiles int // tile rows and columns per image, and their product
	bt, at        []T // Bᵀ (6×6) and Aᵀ (4×6), row-major
	g             []T // G⊗G (36×9)
	u             []T // the transformed weight, [36][C][F]
}

// useWinograd says whether op o computes its forward product by F(4×4, 3×3).
func useWinograd[T num.Float](o *convOp[T]) bool {
	var t T
	_, f32 := any(t).(float32)
	return f32 && o.kh == 3 && o.kw == 3 && o.sh == 1 && o.sw == 1 && o.c >= winogradMinChannels &&
		36*o.c*o.f*4 <= winogradMaxWeight
}

func newWinograd[T num.Float](o *convOp[T]) *winograd[T] {
	ty, tx := (o.oh+3)/4, (o.ow+3)/4
	return &winograd[T]{ty: ty, tx: tx, tiles: ty * tx,
		bt: flat[T](winoBT), g: kron[T](winoG), at: flat[T](winoAT),
		u: make([]T, 36*o.c*o.f)}
}

// gatherTiles copies the ty × tx windows of size × size pixels of one NHWC image x (h × w
// × ch) into dst, laid out [(i, j)][tile][ch] for t tiles in all: window (by, bx) starts at
// pixel (step·by − oy, step·bx − ox), and its pixel (i, j) goes to dst[((i·size + j)·t +
// first + by·tx + bx)·ch …], zeros where it lies outside the image.
func gatherTiles[T num.Float](dst, x []T, h, w, ch, ty, tx, size, step, oy, ox, t, first int) {
	for by := range ty {
		for bx := range tx {
			tile := first + by*tx + bx
			for i := range size {
				iy := step*by - oy + i
				for j := range size {
					ix := step*bx - ox + j
					d := dst[((i*size+j)*t+tile)*ch : ((i*size+j)*t+tile+1)*ch]
					if iy < 0 || iy >= h || ix < 0 || ix >= w {
						clear(d)
						continue
					}
					copy(d, x[(iy*w+ix)*ch:(iy*w+ix+1)*ch])
				}
			}
		}
	}
}

// flat is a row-major copy of a.
func flat[T num.Float](a [][]float64) []T {
	var out []T
	for _, r := range a {
		for _, v := range r {
			out = append(out, T(v))
		}
	}
	return out
}

// scratch is the values per example forward needs: the gathered tiles, then their
// transform in the same place, and the first pass of the transform (36·tiles·C each); the
// 36 products, the first pass of their transform and the output blocks ((36 + 24 +
// 16)·tiles·F).
func (wg *winograd[T]) scratch(c, f int) int { return wg.tiles * (72*c + 76*f) }

// prepare transforms the packed weight wt, [k × F] with k ordered (kh, kw, channel): as a
// 9 × C·F matrix its rows are the filter taps, so U = (G⊗G)·wt is [36][C][F]. Workers
// take disjoint blocks of columns (each value is the same sum whoever computes it).
func (wg *winograd[T]) prepare(wt []T, c, f, workers int) {
	n := c * f
	parallel.For(workers, n, max(64, (n/(2*workers)+63)&^63), func(_, lo, hi int) {
		gemm.Gemm(36, hi-lo, 9, gemm.Matrix[T]{Data: wg.g, Stride: 9}, wt[lo:], n, wg.u[lo:], n, nil, 0)
	})
}

// forward writes Z = conv(x) + bias for n NHWC images in (o's shapes) into out, [n × P × F],
// then the fused activation; buf holds scratch(C, F) values per image.
func (wg *winograd[T]) forward(o *convOp[T], in, out, buf []T, n int) {
	c, f, t := o.c, o.f, n*wg.tiles
	tc, tf := t*c, t*f
	d, z, buf := buf[:36*tc], buf[36*tc:72*tc], buf[72*tc:]
	m, w, y := buf[:36*tf], buf[36*tf:60*tf], buf[60*tf:76*tf]
	// d[(i, j)][tile][channel]: the 6×6 input tiles, zero outside the image.
	inN := o.h * o.w * c
	for e := range n {
		gatherTiles(d, in[e*inN:(e+1)*inN], o.h, o.w, c, wg.ty, wg.tx, 6, 4, o.ph, o.pw, t, e*wg.tiles)
	}
	// z[r][j] = Σ_i Bᵀ[r][i]·d[i][j], then v[r][s] = Σ_j Bᵀ[s][j]·z[r][j] (into d's place):
	// v[ξ = (r, s)][tile][channel] is Bᵀ·d·B.
	bt, at := gemm.Matrix[T]{Data: wg.bt, Stride: 6}, gemm.Matrix[T]{Data: wg.at, Stride: 6}
	v := d
	gemm.Gemm(6, 6*tc, 6, bt, d, 6*tc, z, 6*tc, nil, 0)
	for r := range 6 {
		gemm.Gemm(6, tc, 6, bt, z[r*6*tc:], tc, v[r*6*tc:], tc, nil, 0)
	}
	// m[ξ] = v[ξ]·u[ξ], [ξ][tile][F].
	for xi := range 36 {
		gemm.Gemm(t, f, c, gemm.Matrix[T]{Data: v[xi*tc:], Stride: c}, wg.u[xi*c*f:], f, m[xi*tf:], f, nil, 0)
	}
	// w[y][s] = Σ_r Aᵀ[y][r]·m[r][s], then y[by][bx] = Σ_s Aᵀ[bx][s]·w[by][s]: Aᵀ·m·A,
	// [(row, column) in the block][tile][F].
	gemm.Gemm(4, 6*tf, 6, at, m, 6*tf, w, 6*tf, nil, 0)
	for by := range 4 {
		gemm.Gemm(4, tf, 6, at, w[by*6*tf:], tf, y[by*4*tf:], tf, nil, 0)
	}
	// Scatter the blocks' outputs inside the image into NHWC rows, adding the bias.
	for e := range n {
		z := out[e*o.p*f : (e+1)*o.p*f]
		for ty := range wg.ty {
			for tx := range wg.tx {
				tile := e*wg.tiles + ty*wg.tx + tx
				for by := range min(4, o.oh-4*ty) {
					for bx := range min(4, o.ow-4*tx) {
						src := y[((by*4+bx)*t+tile)*f : ((by*4+bx)*t+tile+1)*f]
						dst := z[((4*ty+by)*o.ow+4*tx+bx)*f : ((4*ty+by)*o.ow+4*tx+bx+1)*f]
						if o.bias == nil {
							copy(dst, src)
							continue
						}
						for j, b := range o.bias[:f] {
							dst[j] = src[j] + b
						}
					}
				}
			}
		}
	}
	switch o.act {
	case actReLU:
		z := out[:n*o.p*f]
		for j, s := range z {
			z[j] = max(s, 0)
		}
	case actTanh:
		tanhInPlace(out[:n*o.p*f])
	}
}
