package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// directConv64 is the oracle: the 3×3 stride-1 convolution of NHWC image x (h×w×c) by
// weight [F, C, 3, 3] in float64, straight from the definition, [OH·OW × F].
func directConv64(x []float32, h, w, c int, weight, bias []float32, f, ph, pw int) (z, abs []float64, oh, ow int) {
	oh, ow = h+2*ph-2, w+2*pw-2
	z, abs = make([]float64, oh*ow*f), make([]float64, oh*ow*f)
	for oy := range oh {
		for ox := range ow {
			for fo := range f {
				var s, a float64
				if bias != nil {
					s, a = float64(bias[fo]), math.Abs(float64(bias[fo]))
				}
				for ki := range 3 {
					for kj := range 3 {
						iy, ix := oy-ph+ki, ox-pw+kj
						if iy < 0 || iy >= h || ix < 0 || ix >= w {
							continue
						}
						for ch := range c {
							p := float64(weight[((fo*c+ch)*3+ki)*3+kj]) * float64(x[(iy*w+ix)*c+ch])
							s += p
							a += math.Abs(p)
						}
					}
				}
				z[(oy*ow+ox)*f+fo], abs[(oy*ow+ox)*f+fo] = s, a
			}
		}
	}
	return z, abs, oh, ow
}

// absTile writes |x| of channel ch over the n×n tile whose top-left input position is
// (y0, x0) into d, row-major: x is one NHWC image, h×w×c, zero outside it (the padding).
func absTile(d []float64, x []float32, h, w, c, ch, y0, x0, n int) {
	for i := range n {
		for j := range n {
			d[i*n+j] = 0
			if iy, ix := y0+i, x0+j; iy >= 0 && iy < h && ix >= 0 && ix < w {
				d[i*n+j] = math.Abs(float64(x[(iy*w+ix)*c+ch]))
			}
		}
	}
}

// winogradBound is a first-order bound on the float32 rounding error of the F(4×4, 3×3)
// outputs of one 4×4 block (Higham, Accuracy and Stability of Numerical Algorithms, §3.5: a
// computed sum of products has error at most γ_N times the sum of the products' absolute
// values, N the length of the chain): the chain is the input transform (36 terms), the
// weight transform (9), the product over C channels, the output transform (36), the bias,
// and the rounding of the transforms' constants (1/6, 1/12, 1/24 and their products; a few
// units), applied to the absolute values of every intermediate term:
// |Aᵀ|⊗|Aᵀ| · Σ_c (|G|⊗|G| |g|) ⊙ (|Bᵀ|⊗|Bᵀ| |d|). The transforms' cancellations make it far
// larger than the direct product's Σ|w·x|. It returns the bound of block output (by, bx).
func winogradBound(x []float32, h, w, c int, weight []float32, ph, pw, ty, tx, fo int) func(by, bx int) float64 {
	kb, kg, ka := absKron(winoBT), absKron(winoG), absKron(winoAT)
	var prod [36]float64
	for ch := range c {
		var d [36]float64
		absTile(d[:], x, h, w, c, ch, 4*ty-ph, 4*tx-pw, 6)
		for xi := range 36 {
			var v, u float64
			for k := range 36 {
				v += kb[xi*36+k] * d[k]
			}
			for k := range 9 {
				u += kg[xi*9+k] * math.Abs(float64(weight[(fo*c+ch)*9+k]))
			}
			prod[xi] += u * v
		}
	}
	n := float64(36 + 9 + c + 36 + 1 + 4)
	u := math.Ldexp(1, -24)
	return func(by, bx int) float64 {
		var s float64
		for xi := range 36 {
			s += ka[(by*4+bx)*36+xi] * prod[xi]
		}
		return n * u / (1 - n*u) * s
	}
}

// absKron is |a|⊗|a|. (kron's own errors would show in the forward values, far above
// any rounding bound.)
func absKron(a [][]float64) []float64 {
	b := make([][]float64, len(a))
	for i, r := range a {
		for _, v := range r {
			b[i] = append(b[i], math.Abs(v))
		}
	}
	return kron[float64](b)
}

// TestWinogradForward holds F(4×4, 3×3)'s forward product, on every CPU path, to the
// float64 definition of the convolution within winogradBound, for images whose sides are
// and are not multiples of the 4×4 output block, with and without padding and bias, and
// for the activations fused after it.
func TestWinogradForward(t *testing.T) {
	type shape struct{ h, w, c, f, ph, pw, n int }
	for _, path := range cpupath.Supported() {
		for _, sh := range []shape{
			{8, 8, 243, 64, 1, 1, 2},  // the scatter CNN's first convolution
			{7, 9, 5, 3, 1, 1, 3},     // blocks cut by the image's edge
			{6, 6, 4, 17, 0, 0, 1},    // no padding: one block
			{10, 5, 33, 8, 1, 0, 2},   // mixed padding
			{3, 3, 2, 2, 1, 1, 1},     // a single partial block
			{12, 12, 16, 32, 1, 1, 2}, // 3×3 blocks
		} {
			for _, act := range []actFunc{actNone, actReLU, actTanh} {
				if sh.c > 64 && act != actNone {
					continue // the activations are checked on the small shapes (and the oracle is slow under emulation)
				}
				noBias := sh.c%2 == 0
				t.Run(fmt.Sprintf("%s/%dx%dx%d-f%d-p%d%d-act%d", path, sh.h, sh.w, sh.c, sh.f, sh.ph, sh.pw, act), func(t *testing.T) {
					defer cpupath.Force(path)()
					rng := rand.New(rand.NewPCG(uint64(sh.c), uint64(act)))
					l := Conv2D{Filters: sh.f, Kernel: [2]int{3, 3}, Padding: [2]int{sh.ph, sh.pw}, NoBias: noBias}
					weight := make([]float32, sh.f*sh.c*9)
					for i := range weight {
						weight[i] = float32(rng.NormFloat64() / math.Sqrt(float64(9*sh.c)))
					}
					ps := [][]float32{weight}
					var bias []float32
					if !noBias {
						bias = make([]float32, sh.f)
						for i := range bias {
							bias[i] = float32(rng.NormFloat64())
						}
						ps = append(ps, bias)
					}
					o, _, err := newConvOp(l, activation{image: true, nhwc: true, h: sh.h, w: sh.w, c: sh.c, n: sh.h * sh.w * sh.c}, sh.n, ps, act, false, false)
					if err != nil {
						t.Fatal(err)
					}
					o.wino = newWinograd(o) // whatever the channel count
					o.prepare()
					inN := sh.h * sh.w * sh.c
					x := make([]float32, sh.n*inN)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					out := make([]float32, sh.n*o.p*o.f)
					sc := &nativeScratch[float32]{floats: [][]float32{make([]float32, sh.n*o.uSize())}}
					o.forward(sc, 0, x, out, sh.n, 0)
					worst := 0.0
					bounds := map[[4]int]func(int, int) float64{}
					for e := range sh.n {
						xe := x[e*inN : (e+1)*inN]
						ref, _, oh, ow := directConv64(xe, sh.h, sh.w, sh.c, weight, bias, sh.f, sh.ph, sh.pw)
						if oh*ow != o.p {
							t.Fatalf("oracle has %d×%d outputs, op %d", oh, ow, o.p)
						}
						for oy := range oh {
							for ox := range ow {
								for fo := range sh.f {
									i := (oy*ow+ox)*sh.f + fo
									got, want := float64(out[e*o.p*o.f+i]), ref[i]
									// The activation is applied to the float32 sum: allow
									// its own error (tanh: a few ulps, internal/gemm) on top.
									key := [4]int{e, oy / 4, ox / 4, fo}
									if bounds[key] == nil {
										bounds[key] = winogradBound(xe, sh.h, sh.w, sh.c, weight, sh.ph, sh.pw, oy/4, ox/4, fo)
									}
									bound := bounds[key](oy%4, ox%4)
									switch act {
									case actReLU:
										want = max(want, 0)
									case actTanh:
										want, bound = math.Tanh(want), bound+8*math.Ldexp(1, -24)
									}
									if d := math.Abs(got - want); d > bound || math.IsNaN(got) {
										t.Fatalf("image %d output (%d, %d, %d): %v, float64 definition %v: error %.3g over the bound %.3g", e, oy, ox, fo, got, want, d, bound)
									} else if bound > 0 {
										worst = max(worst, d/bound)
									}
								}
							}
						}
					}
					t.Logf("worst error / bound: %.3g", worst)
				})
			}
		}
	}
}

// TestWinogradChosen: the convolutions that take F(4×4, 3×3) are the float32 3×3 stride-1
// ones with at least winogradMinChannels input channels and a transformed weight of at most
// winogradMaxWeight bytes; float64 (the oracle engine's dtype), strided, other kernels,
// narrower inputs and wider layers keep the direct product.
func TestWinogradChosen(t *testing.T) {
	in := func(c int) activation { return activation{image: true, nhwc: true, h: 8, w: 8, c: c, n: 64 * c} }
	for _, tc := range []struct {
		l    Conv2D
		c    int
		f64  bool
		want bool
	}{
		{Conv2D{Filters: 64, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, 243, false, true},
		{Conv2D{Filters: 64, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, 243, true, false},
		{Conv2D{Filters: 64, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, 128, false, false},
		{Conv2D{Filters: 64, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, 243, false, false},
		{Conv2D{Filters: 64, Kernel: [2]int{5, 5}, Padding: [2]int{2, 2}}, 243, false, false},
		{Conv2D{Filters: 256, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, 256, false, false},
	} {
		var got bool
		if tc.f64 {
			o, _, err := newConvOp(tc.l, in(tc.c), 1, [][]float64{make([]float64, tc.l.Filters*tc.c*tc.l.Kernel[0]*tc.l.Kernel[1]), make([]float64, tc.l.Filters)}, actNone, false, false)
			if err != nil {
				t.Fatal(err)
			}
			got = o.wino != nil
		} else {
			o, _, err := newConvOp(tc.l, in(tc.c), 1, [][]float32{make([]float32, tc.l.Filters*tc.c*tc.l.Kernel[0]*tc.l.Kernel[1]), make([]float32, tc.l.Filters)}, actNone, false, false)
			if err != nil {
				t.Fatal(err)
			}
			got = o.wino != nil
		}
		if got != tc.want {
			t.Errorf("%+v on %d channels (float64 %v): Winograd %v, want %v", tc.l, tc.c, tc.f64, got, tc.want)
		}
	}
}
