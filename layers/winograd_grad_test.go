package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/internal/cpupath"
)

// directWeightGrad64 is the oracle: one example's weight gradient of a 3×3 stride-1
// convolution straight from the definition in float64, dW[f][c][ki][kj] = Σ_{oy,ox}
// dz[oy, ox, f]·x[oy − ph + ki, ox − pw + kj, c] ([F, C, 3, 3], the layer's own layout).
func directWeightGrad64(x []float32, h, w, c int, dz []float32, f, ph, pw int) []float64 {
	oh, ow := h+2*ph-2, w+2*pw-2
	out := make([]float64, f*c*9)
	for fo := range f {
		for ch := range c {
			for ki := range 3 {
				for kj := range 3 {
					var s float64
					for oy := range oh {
						for ox := range ow {
							iy, ix := oy-ph+ki, ox-pw+kj
							if iy < 0 || iy >= h || ix < 0 || ix >= w {
								continue
							}
							s += float64(dz[(oy*ow+ox)*f+fo]) * float64(x[(iy*w+ix)*c+ch])
						}
					}
					out[((fo*c+ch)*3+ki)*3+kj] = s
				}
			}
		}
	}
	return out
}

// winoGradBound is a first-order bound on the float32 rounding error of F(2×2, 3×3)'s
// gradient of filter fo, channel ch (Higham §3.5, as winogradBound): the chain is the
// input transform (16 terms), the output gradient's (4), the sum over the tiles, and the
// filter transform (16), applied to the absolute values of every intermediate term,
// |Gᵀ|⊗|Gᵀ| · Σ_tiles (|A|⊗|A| |dY|) ⊙ (|Bᵀ|⊗|Bᵀ| |d|). It returns the bounds of the 9 taps.
func winoGradBound(x []float32, h, w, c int, dz []float32, f, ph, pw, fo, ch int) [9]float64 {
	oh, ow := h+2*ph-2, w+2*pw-2
	ty, tx := (oh+1)/2, (ow+1)/2
	kb, kg := absKron(wino2BT), absKron(wino2G)
	ka := absKron(wino2AT) // |Aᵀ|⊗|Aᵀ|, 4×16: its transpose maps the 2×2 block to 16
	var prod [16]float64
	for by := range ty {
		for bx := range tx {
			var d [16]float64
			var e [4]float64
			absTile(d[:], x, h, w, c, ch, 2*by-ph, 2*bx-pw, 4)
			for a := range 2 {
				for b := range 2 {
					oy, ox := 2*by+a, 2*bx+b
					if oy < oh && ox < ow {
						e[a*2+b] = math.Abs(float64(dz[(oy*ow+ox)*f+fo]))
					}
				}
			}
			for xi := range 16 {
				var v, y float64
				for k := range 16 {
					v += kb[xi*16+k] * d[k]
				}
				for k := range 4 {
					y += ka[k*16+xi] * e[k]
				}
				prod[xi] += v * y
			}
		}
	}
	n := float64(16 + 4 + ty*tx + 16 + 2)
	u := math.Ldexp(1, -24)
	var out [9]float64
	for k := range 9 {
		var s float64
		for xi := range 16 {
			s += kg[xi*9+k] * prod[xi] // |G|⊗|G| is 16×9: (|Gᵀ|⊗|Gᵀ|)ᵀ
		}
		out[k] = n * u / (1 - n*u) * s
	}
	return out
}

// TestWinogradGradient holds F(2×2, 3×3)'s per-example weight gradient, on every CPU path,
// to the float64 definition within winoGradBound, for outputs whose sides are and are not
// even, with and without padding.
func TestWinogradGradient(t *testing.T) {
	type shape struct{ h, w, c, f, ph, pw int }
	for _, path := range cpupath.Supported() {
		for _, sh := range []shape{
			{8, 8, 243, 64, 1, 1}, // the scatter CNN's first convolution
			{7, 9, 5, 3, 1, 1},    // odd output sides: blocks cut by the edge
			{6, 6, 4, 17, 0, 0},   // no padding
			{10, 5, 33, 8, 1, 0},  // mixed padding
			{3, 3, 2, 2, 1, 1},    // 3×3 outputs
			{1, 1, 3, 2, 1, 1},    // one output, one tile
		} {
			t.Run(fmt.Sprintf("%s/%dx%dx%d-f%d-p%d%d", path, sh.h, sh.w, sh.c, sh.f, sh.ph, sh.pw), func(t *testing.T) {
				defer cpupath.Force(path)()
				rng := rand.New(rand.NewPCG(uint64(sh.c), uint64(sh.f)))
				l := Conv2D{Filters: sh.f, Kernel: [2]int{3, 3}, Padding: [2]int{sh.ph, sh.pw}}
				ps := [][]float32{make([]float32, sh.f*sh.c*9), make([]float32, sh.f)}
				o, _, err := newConvOp(l, activation{image: true, nhwc: true, h: sh.h, w: sh.w, c: sh.c, n: sh.h * sh.w * sh.c}, 1, ps, actNone, true, false)
				if err != nil {
					t.Fatal(err)
				}
				wg := newWinoGrad(o)
				x, dz := randFloat32s(rng, sh.h*sh.w*sh.c), randFloat32s(rng, o.p*o.f)
				g := make([]float32, o.f*o.k)
				for i := range g {
					g[i] = float32(math.NaN()) // every value must be written
				}
				wg.example(x, dz, g, make([]float32, wg.scratch()))
				ref := directWeightGrad64(x, sh.h, sh.w, sh.c, dz, sh.f, sh.ph, sh.pw)
				worst := 0.0
				for fo := range sh.f {
					for ch := range sh.c {
						bound := winoGradBound(x, sh.h, sh.w, sh.c, dz, sh.f, sh.ph, sh.pw, fo, ch)
						for k := range 9 {
							got := float64(g[fo*o.k+k*sh.c+ch])
							want := ref[(fo*sh.c+ch)*9+k]
							if d := math.Abs(got - want); !(d <= bound[k]) {
								t.Fatalf("filter %d channel %d tap %d: %v, float64 definition %v: error %.3g over the bound %.3g", fo, ch, k, got, want, d, bound[k])
							} else if bound[k] > 0 {
								worst = max(worst, d/bound[k])
							}
						}
					}
				}
				t.Logf("worst error / bound: %.3g", worst)
			})
		}
	}
}

// BenchmarkWinogradGradient: one example's weight gradient of the scatter CNN's first
// convolution by F(2×2, 3×3), against the direct product on rebuilt patches.
func BenchmarkWinogradGradient(b *testing.B) {
	l := Conv2D{Filters: 64, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}
	ps := [][]float32{make([]float32, 64*243*9), make([]float32, 64)}
	o, _, err := newConvOp(l, activation{image: true, nhwc: true, h: 8, w: 8, c: 243, n: 8 * 8 * 243}, 1, ps, actNone, true, false)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x, dz := randFloat32s(rng, 8*8*243), randFloat32s(rng, o.p*o.f)
	g := make([]float32, o.k*o.f)
	b.Run("winograd", func(b *testing.B) {
		wg := newWinoGrad(o)
		buf := make([]float32, wg.scratch())
		for range b.N {
			wg.example(x, dz, g, buf)
		}
	})
	b.Run("direct", func(b *testing.B) {
		u := make([]float32, o.p*o.k)
		for range b.N {
			o.im2col(x, u)
			gemmDirect(o, dz, u, g)
		}
	})
}

func gemmDirect(o *convOp[float32], dz, u, g []float32) {
	(&convScratch[float32]{t: &Conv2DGradient[float32]{GradZ: dz, In: u, InDim: o.k, OutDim: o.f, Positions: o.p, PositionsMajor: true}}).Example(-1, 0, g)
}

// TestWinogradTransformKernelsMatchGo: the F(2×2, 3×3) gradient's input and output
// transforms on each path's kernels against their Go versions, bit for bit, for every
// channel count mod 8 (the kernels' whole vectors and Go's tail) and strided layouts.
func TestWinogradTransformKernelsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 2))
	onPaths(t, "winograd-transforms", func(t *testing.T, _ cpupath.Path, _ bool) {
		for _, n := range []int{1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 40, 243} {
			cs := n + rng.IntN(3)
			rs := 4*cs + rng.IntN(5)
			x := randFloat32s(rng, 3*rs+3*cs+n)
			plane := n + rng.IntN(4)
			got, want := make([]float32, 16*plane), make([]float32, 16*plane)
			winoIn2(x, got, rs, cs, plane, n)
			winoIn2Go(x, want, rs, cs, plane, n)
			sameBits32(t, fmt.Sprintf("input transform n=%d", n), got, want)

			m := randFloat32s(rng, 16*plane)
			gs := n + rng.IntN(3)
			gotG, wantG := make([]float32, 9*gs), make([]float32, 9*gs)
			winoOut2(m, gotG, plane, gs, n)
			winoOut2Go(m, wantG, plane, gs, n)
			sameBits32(t, fmt.Sprintf("output transform n=%d", n), gotG, wantG)
		}
	})
}

// TestWinogradGradientInNative: a native float32 convolution that takes Winograd's forward
// forms its per-example weight gradients by F(2×2, 3×3) (its tap's Example), in the
// layer's own layout after Scatter, within winoGradBound of the float64 definition at the
// forward's output gradient; the bias gradient is the sum over positions.
func TestWinogradGradientInNative(t *testing.T) {
	const b, h, w, c, f = 3, 5, 6, 200, 7
	for _, path := range cpupath.Supported() {
		t.Run(path.String(), func(t *testing.T) {
			defer cpupath.Force(path)()
			rng := rand.New(rand.NewPCG(45, 1))
			l := Conv2D{Filters: f, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}
			params := [][][]float32{{randFloat32s(rng, f*c*9), randFloat32s(rng, f)}, nil}
			nv, err := NewNative[float32]([]Layer{l, Flatten{}}, []int{c, h, w}, b, params, true)
			if err != nil {
				t.Fatal(err)
			}
			var op *convOp[float32]
			for _, o := range nv.ops {
				if c, ok := o.(*convOp[float32]); ok {
					op = c
				}
			}
			if op == nil || op.wino == nil {
				t.Fatal("the convolution does not take Winograd's forward")
			}
			x := randFloat32s(rng, b*c*h*w)
			copy(nv.Input(), x)
			nv.Prepare()
			r := randFloat32s(rng, b*h*w*f)
			nv.Forward(0, 0, b)
			nv.Backward(0, 0, b, r)
			g := nv.Taps()[0]
			if ct := g.(interface {
				Unwrap() clipping.ExampleKind[float32]
			}).Unwrap().(*Conv2DGradient[float32]); ct.wino == nil {
				t.Fatal("the tap forms its gradients by direct products")
			}
			sc := g.NewScratch(1)
			buf := make([]float32, g.NumParams())
			dst := make([]float64, g.NumParams())
			for i := range b {
				sc.Example(-1, i, buf)
				g.Scatter(buf, dst, true)
				// The input as the op holds it (NHWC) and dZ (positions major).
				xi := nv.acts[op.in].batch[i*h*w*c : (i+1)*h*w*c]
				dz := op.gradZ[i*h*w*f : (i+1)*h*w*f]
				ref := directWeightGrad64(xi, h, w, c, dz, f, 1, 1)
				for fo := range f {
					for ch := range c {
						bound := winoGradBound(xi, h, w, c, dz, f, 1, 1, fo, ch)
						for k := range 9 {
							j := (fo*c+ch)*9 + k
							if d := math.Abs(dst[j] - ref[j]); !(d <= bound[k]) {
								t.Fatalf("example %d filter %d channel %d tap %d: %v, definition %v (bound %.3g)", i, fo, ch, k, dst[j], ref[j], bound[k])
							}
						}
					}
				}
				for fo := range f {
					var s, a float64
					for p := range h * w {
						s += float64(dz[p*f+fo])
						a += math.Abs(float64(dz[p*f+fo]))
					}
					if d := math.Abs(dst[f*c*9+fo] - s); d > 1e-6*a {
						t.Fatalf("example %d bias %d: %v, sum %v", i, fo, dst[f*c*9+fo], s)
					}
				}
			}
		})
	}
}
