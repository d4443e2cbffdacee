package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// Kernel-level checks of layers' native float32 kernels against their Go versions on every
// path this CPU supports (avx512, avx2, generic on amd64; the generic path compares Go with
// itself), with the sizes that reach each kernel's tails: runs and slices of every length
// mod 16, GroupNorm images of 1–3 positions and 8–40 channels, WSConv2D rows of 8–2,312
// values. The stacks of TestNativeAssemblyMatchesGo and TestGroupNormAssemblyMatchesGo
// cover the same kernels inside a network.

// onPaths runs f once per supported path with the path's kernels and once with their Go
// versions (goKernels; internal/gemm stays on the path).
func onPaths(t *testing.T, name string, f func(t *testing.T, p cpupath.Path, native bool)) {
	for _, p := range cpupath.Supported() {
		t.Run(name+"/"+p.String(), func(t *testing.T) {
			defer cpupath.Force(p)()
			defer func(v bool) { goKernels = v }(goKernels)
			for _, native := range []bool{true, false} {
				goKernels = !native
				f(t, p, native)
			}
		})
	}
}

func randFloat32s(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func sameBits32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d]: kernel %v (%#x), Go %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func sameBits64(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s[%d]: kernel %v, Go %v", what, i, got[i], want[i])
		}
	}
}

// TestPatchKernelsMatchGo: im2col (patchCopy32) and col2im (patchAdd32) on random runs of
// 0–37 values (every tail of 16, 8 and 4 lanes), padded rows of every length, bit for bit.
func TestPatchKernelsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 1))
	for _, k := range []int{1, 3, 7, 8, 9, 15, 16, 17, 25, 33, 40} {
		const xlen, npos = 200, 9
		o := &convOp[float32]{h: 1, w: xlen, c: 1, k: k, p: npos}
		o.runStart = []int32{0}
		for range npos {
			// Runs cover disjoint parts of the patch; the rest is padding.
			for dst := 0; dst < k; {
				n := 1 + rng.IntN(k-dst)
				if rng.IntN(3) > 0 {
					o.runs = append(o.runs, int32(rng.IntN(xlen-n+1)), int32(dst), int32(n))
				}
				dst += n
			}
			o.runStart = append(o.runStart, int32(len(o.runs)/3))
			o.padded = append(o.padded, uint8(rng.IntN(2)))
		}
		if len(o.runs) == 0 {
			o.runs = []int32{0, 0, 0} // never read; the kernels take &runs[0]
		}
		x, du := randFloat32s(rng, xlen), randFloat32s(rng, npos*k)
		var u0, dx0 []float32
		onPaths(t, fmt.Sprintf("k=%d", k), func(t *testing.T, p cpupath.Path, native bool) {
			u := slices.Repeat([]float32{7}, npos*k) // stale values the padding must clear
			o.im2col(x, u)
			dx := slices.Repeat([]float32{7}, xlen)
			o.col2im(du, dx)
			if !native {
				sameBits32(t, "im2col", u0, u)
				sameBits32(t, "col2im", dx0, dx)
			} else {
				u0, dx0 = u, dx
			}
		})
	}
}

// TestReLUKernelMatchesGo: the stand-alone ReLU on every length 1–70 with NaN, ±0 and
// ±Inf among the values, bit for bit (NaN and −0 pass, as in the Go loop).
func TestReLUKernelMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 2))
	op := &activationOp[float32]{f: actReLU}
	for n := 1; n <= 70; n++ {
		in := randFloat32s(rng, n)
		specials := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1))}
		for i := range in {
			if rng.IntN(4) == 0 {
				in[i] = specials[rng.IntN(len(specials))]
			}
		}
		var want []float32
		onPaths(t, fmt.Sprintf("n=%d", n), func(t *testing.T, p cpupath.Path, native bool) {
			out := slices.Repeat([]float32{7}, n+1) // the value past n stays
			op.forward(nil, 0, in, out[:n], 1, 0)
			if out[n] != 7 {
				t.Fatalf("n=%d: wrote past the end", n)
			}
			if native {
				want = out
			} else {
				sameBits32(t, "relu", want, out)
			}
		})
	}
}

// TestGroupNormKernelsMatchGo: gnSums (plain and masked), gnNormalize (with and without
// ReLU) and gnInputGrad (plain and masked) on images of 1–3 positions (the odd position of
// the even/odd accumulators) and 8–40 channels, the masks holding NaN, ±0 and negatives,
// bit for bit.
func TestGroupNormKernelsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 3))
	for _, p := range []int{1, 2, 3, 7} {
		for _, c := range []int{8, 16, 24, 40} {
			n := p * c
			a, b, dy, xh := randFloat32s(rng, n), randFloat32s(rng, n), randFloat32s(rng, n), randFloat32s(rng, n)
			mask := randFloat32s(rng, n)
			for i := range mask {
				switch rng.IntN(6) {
				case 0:
					mask[i] = float32(math.NaN())
				case 1:
					mask[i] = float32(math.Copysign(0, -1))
				case 2:
					mask[i] = 0
				}
				if !(mask[i] > 0) && rng.IntN(2) == 0 {
					a[i], dy[i] = float32(math.NaN()), float32(math.Inf(1)) // masked out: never read as such
				}
			}
			mean, r, g, mg, mgx := make([]float64, c), make([]float64, c), make([]float64, c), make([]float64, c), make([]float64, c)
			for j := range c {
				mean[j], r[j] = rng.NormFloat64(), 0.5+rng.Float64()
				g[j], mg[j], mgx[j] = rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
			}
			gamma, beta := randFloat32s(rng, c), randFloat32s(rng, c)
			type result struct {
				sa, sab [2][]float64
				xh, y   [2][]float32
				dx      [2][]float32
			}
			var want result
			onPaths(t, fmt.Sprintf("p=%d,c=%d", p, c), func(t *testing.T, path cpupath.Path, native bool) {
				var got result
				for mi, m := range [][]float32{nil, mask} {
					sa, sab := make([]float64, 2*c), make([]float64, 2*c)
					gnSums(a, b, m, p, c, sa, sab)
					got.sa[mi], got.sab[mi] = sa[:c], sab[:c]
					xh2, y := make([]float32, n), make([]float32, n)
					gnNormalize(a[:0:0], xh2[:0], y[:0], 0, c, mean, r, gamma, beta, mi == 1) // p = 0: nothing
					gnNormalize(b, xh2, y, p, c, mean, r, gamma, beta, mi == 1)
					got.xh[mi], got.y[mi] = xh2, y
					dx := make([]float32, n)
					gnInputGrad(dy, xh, m, dx, p, c, g, mg, mgx, r)
					got.dx[mi] = dx
				}
				if native {
					want = got
					return
				}
				for mi := range 2 {
					sameBits64(t, "sa", got.sa[mi], want.sa[mi])
					sameBits64(t, "sab", got.sab[mi], want.sab[mi])
					sameBits32(t, "xh", got.xh[mi], want.xh[mi])
					sameBits32(t, "y", got.y[mi], want.y[mi])
					sameBits32(t, "dx", got.dx[mi], want.dx[mi])
				}
			})
		}
	}
}

// TestWSChainKernels: WSConv2D's chain rule. The AVX2 kernel sums in the AVX-512 kernel's
// lanes and order, so the two agree bit for bit where the CPU runs both; either differs from
// the Go loop (one float64 accumulator) only through the order of its float64 sums, so each
// value is within one float32 ulp of Go's plus what reordering a float64 sum can change:
// r·(δmean + |ŵ|·δdot) with δ ≤ 2k·2⁻⁵³·Σ|terms| (Higham's bound for each order, twice).
func TestWSChainKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 4))
	for _, k := range []int{8, 16, 24, 72, 136, 2312} {
		const f = 5
		w := randFloat32s(rng, f*k)
		what, rstd := make([]float32, f*k), make([]float32, f)
		standardize(w, what, rstd, f, k)
		grad := randFloat32s(rng, f*k)
		goOut := slices.Clone(grad)
		func() {
			defer func(v bool) { goKernels = v }(goKernels)
			goKernels = true
			wsChain(goOut, what, rstd, f, k)
		}()
		perPath := map[cpupath.Path][]float32{}
		onPaths(t, fmt.Sprintf("k=%d", k), func(t *testing.T, p cpupath.Path, native bool) {
			if !native {
				return
			}
			out := slices.Clone(grad)
			wsChain(out, what, rstd, f, k)
			perPath[p] = out
			for row := range f {
				var absSum, absDot float64
				for j := row * k; j < (row+1)*k; j++ {
					absSum += math.Abs(float64(grad[j]))
					absDot += math.Abs(float64(grad[j]) * float64(what[j]))
				}
				u := 2 * float64(k) * 0x1p-53
				for j := row * k; j < (row+1)*k; j++ {
					bound := float64(rstd[row])*(u*absSum/float64(k)+math.Abs(float64(what[j]))*u*absDot) + ulp32(goOut[j])
					if d := math.Abs(float64(out[j]) - float64(goOut[j])); d > bound {
						t.Fatalf("k=%d, value %d: kernel %v, Go %v: off by %g > %g", k, j, out[j], goOut[j], d, bound)
					}
				}
			}
		})
		if a, b := perPath[cpupath.AVX512], perPath[cpupath.AVX2]; a != nil && b != nil {
			sameBits32(t, "wsChain avx2 against avx512", b, a)
		}
	}
}

// ulp32 is the gap between |v| and the next float32 above it.
func ulp32(v float32) float64 {
	a := float32(math.Abs(float64(v)))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// TestMaxPoolKernelsMatchGo: max-pooling forward (values and winners) and backward on
// channel counts 1–20 (full vectors of 8 and 16 lanes and every tail), overlapping and
// padded windows, NaN, ±0 and ties among the inputs and the gradients, bit for bit.
func TestMaxPoolKernelsMatchGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 6))
	for _, c := range []int{1, 3, 7, 8, 9, 16, 17, 20} {
		for _, l := range []MaxPool2D{
			{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
			{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
		} {
			in := activation{image: true, nhwc: true, h: 6, w: 5, c: c, n: 30 * c}
			o, out, err := newMaxPoolOp[float32](l, in)
			if err != nil {
				t.Fatal(err)
			}
			const n = 2
			x, g := randFloat32s(rng, n*in.n), randFloat32s(rng, n*out.n)
			specials := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, 1}
			for _, v := range [][]float32{x, g} {
				for i := range v {
					if rng.IntN(5) == 0 {
						v[i] = specials[rng.IntN(len(specials))] // ties too
					}
				}
			}
			var wy, wdx []float32
			var widx []int32
			onPaths(t, fmt.Sprintf("c=%d/stride=%d", c, l.Stride[0]), func(t *testing.T, p cpupath.Path, native bool) {
				sc := &nativeScratch[float32]{indices: [][]int32{make([]int32, n*out.n)}}
				y, dx := make([]float32, n*out.n), slices.Repeat([]float32{7}, n*in.n)
				o.forward(sc, 0, x, y, n, 0)
				o.backward(sc, 0, nil, nil, g, dx, n, 0)
				if native {
					wy, wdx, widx = y, dx, slices.Clone(sc.indices[0])
					return
				}
				sameBits32(t, "y", wy, y)
				if !slices.Equal(widx, sc.indices[0]) {
					t.Fatalf("winners differ")
				}
				sameBits32(t, "dx", wdx, dx)
			})
		}
	}
}
