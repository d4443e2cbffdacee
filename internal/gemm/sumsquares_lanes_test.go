package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// sumSquaresLanes32 is the lane order of the AVX-512 kernel sumSquares32 written out: lane
// l of 32 sums x_j² for j ≡ l (mod 32) by fused multiply-adds in order of j; the four
// 8-lane accumulators Z0…Z3 (lanes 0–7, 8–15, 16–23, 24–31) are added as (Z0+Z1)+(Z2+Z3),
// then the upper 4 lanes onto the lower 4, 2 onto 2, 1 onto 1.
func sumSquaresLanes32(x []float32) float64 {
	var lane [32]float64
	for j, v := range x {
		w := float64(v)
		lane[j%32] = math.FMA(w, w, lane[j%32])
	}
	var z [8]float64
	for l := range 8 {
		z[l] = (lane[l] + lane[8+l]) + (lane[16+l] + lane[24+l])
	}
	y := [4]float64{z[0] + z[4], z[1] + z[5], z[2] + z[6], z[3] + z[7]}
	return (y[0] + y[2]) + (y[1] + y[3])
}

// TestSumSquaresKernelLaneOrder: on the paths with a float32 SumSquares kernel (avx512,
// neon; avx2 is held to avx512 bit for bit by its own test), a length that is a multiple of
// 32 runs on the kernel alone, which must give exactly the lane order above, so that the
// per-example norms, hence the clip factors, are the same bits on amd64 and arm64.
func TestSumSquaresKernelLaneOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 32))
	for _, p := range cpupath.Supported() {
		if p != cpupath.AVX512 && p != cpupath.NEON {
			continue
		}
		for _, n := range []int{32, 64, 96, 1024, 8224} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(1 + rng.NormFloat64()) // similar magnitudes: every rounding counts
			}
			func() {
				defer cpupath.Force(p)()
				want := sumSquaresLanes32(x)
				if got := SumSquares(x); math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("%v n=%d: %v, the AVX-512 lane order gives %v", p, n, got, want)
				}
			}()
		}
	}
}
