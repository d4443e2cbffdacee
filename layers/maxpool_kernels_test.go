package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// TestMaxPoolKernelsTiesAndSpecials runs the float32 max-pool forward and backward on every path
// this CPU supports (its kernels) and with the Go loops (goKernels), on inputs with ties
// (values drawn from a handful, so the first maximum in window order must win), NaN, ±0
// and ±Inf, for channel counts that are and are not multiples of the kernels' vectors:
// outputs, winning offsets and input gradients must agree bit for bit.
func TestMaxPoolKernelsTiesAndSpecials(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 9))
	pool := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, 1, 1, 2, -1,
		float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, c := range []int{1, 4, 8, 12, 16, 20, 32, 33} {
		for _, l := range []MaxPool2D{
			{Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}},
			{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
			{Kernel: [2]int{2, 3}, Stride: [2]int{1, 2}, Padding: [2]int{1, 1}},
		} {
			in := activation{image: true, nhwc: true, h: 6, w: 5, c: c}
			o, _, err := newMaxPoolOp[float32](l, in)
			if err != nil {
				t.Fatal(err)
			}
			const n = 2
			inN, outN := o.h*o.w*o.c, o.oh*o.ow*o.c
			x, g := make([]float32, n*inN), make([]float32, n*outN)
			for i := range x {
				x[i] = pool[rng.IntN(len(pool))]
			}
			for i := range g {
				g[i] = float32(rng.NormFloat64())
			}
			for _, p := range cpupath.Supported() {
				run := func(asm bool) (y []float32, idx []int32, dx []float32) {
					defer cpupath.Force(p)()
					defer func(v bool) { goKernels = v }(goKernels)
					goKernels = !asm
					sc := &nativeScratch[float32]{indices: [][]int32{make([]int32, n*outN)}}
					y, dx = make([]float32, n*outN), make([]float32, n*inN)
					o.forward(sc, 0, x, y, n, 0)
					o.backward(sc, 0, nil, nil, g, dx, n, 0)
					return y, sc.indices[0], dx
				}
				ya, ia, da := run(true)
				yg, ig, dg := run(false)
				for i := range yg {
					if math.Float32bits(ya[i]) != math.Float32bits(yg[i]) {
						t.Fatalf("%v c=%d %+v: output %d is %v, Go gives %v", p, c, l, i, ya[i], yg[i])
					}
				}
				if !slices.Equal(ia, ig) {
					t.Fatalf("%v c=%d %+v: winning offsets differ", p, c, l)
				}
				for i := range dg {
					if math.Float32bits(da[i]) != math.Float32bits(dg[i]) {
						t.Fatalf("%v c=%d %+v: input gradient %d is %v, Go gives %v", p, c, l, i, da[i], dg[i])
					}
				}
			}
		}
	}
}
