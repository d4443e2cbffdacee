package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// TestReLUKernelsSpecialValues runs the float32 ReLU forward and gradient on every path this CPU
// supports (the AVX-512, AVX2 or NEON kernels there are) and with the Go loops
// (goKernels), on every length up to 40 (full vectors and tails) and values that include
// NaN, ±0, ±Inf and subnormals: the results must agree bit for bit.
func TestReLUKernelsSpecialValues(t *testing.T) {
	specials := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)),
		float32(math.Inf(-1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1, -1}
	rng := rand.New(rand.NewPCG(38, 64))
	for _, p := range cpupath.Supported() {
		for n := 1; n <= 40; n++ {
			in, g := make([]float32, n), make([]float32, n)
			for i := range in {
				in[i] = float32(rng.NormFloat64())
				if rng.IntN(3) == 0 {
					in[i] = specials[rng.IntN(len(specials))]
				}
				g[i] = float32(rng.NormFloat64())
			}
			run := func(asm bool) (out, dz []float32) {
				defer cpupath.Force(p)()
				defer func(v bool) { goKernels = v }(goKernels)
				goKernels = !asm
				out, dz = make([]float32, n), make([]float32, n)
				op := &activationOp[float32]{f: actReLU}
				op.forward(nil, 0, in, out, 1, 0)
				// The gradient from y = the ReLU's outputs (≥ +0, −0, NaN, +Inf), its
				// contract: the AVX kernels pass g where y ≠ 0, the Go loop where y > 0.
				activationGrad(actReLU, dz, g, out)
				return out, dz
			}
			oa, da := run(true)
			og, dg := run(false)
			for i := range n {
				if math.Float32bits(oa[i]) != math.Float32bits(og[i]) {
					t.Fatalf("%v n=%d: ReLU(%v) = %v, Go gives %v", p, n, in[i], oa[i], og[i])
				}
				if math.Float32bits(da[i]) != math.Float32bits(dg[i]) {
					t.Fatalf("%v n=%d: gradient at y=%v, g=%v: %v, Go gives %v", p, n, og[i], g[i], da[i], dg[i])
				}
			}
		}
	}
}
