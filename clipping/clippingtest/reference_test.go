package clippingtest

import (
	"math"
	"slices"
	"testing"
)

// The suite's oracle against gradients worked by hand.
func TestBruteGradientByHand(t *testing.T) {
	// Dense 2 → 1 with bias, example 1 of two: a = (3, 4), dz = 2: W's gradient a·dz =
	// (6, 8), b's dz = 2.
	dense := Layer[float64]{Kind: Dense, InDim: 2, OutDim: 1, Bias: true, In: []float64{9, 9, 3, 4}, GradZ: []float64{9, 2}}
	// Conv with 2 positions, InDim 2, OutDim 1, no bias, one example: U = [[1, 2], [3, 4]],
	// dz = (1, −1): W's gradient Σ_p dz_p·U_p = (1−3, 2−4) = (−2, −2).
	conv := Layer[float64]{Kind: Conv, InDim: 2, OutDim: 1, Positions: 2, In: []float64{1, 2, 3, 4}, GradZ: []float64{1, -1}}
	if got := BruteGradient([]Layer[float64]{dense}, 1); !slices.Equal(got[0], []float64{6, 8, 2}) {
		t.Errorf("dense: %v, want [6 8 2]", got[0])
	}
	if got := BruteGradient([]Layer[float64]{conv}, 0); !slices.Equal(got[0], []float64{-2, -2}) {
		t.Errorf("conv: %v, want [-2 -2]", got[0])
	}
	// Flat C = 1 on example 1 alone: norm √(36+64+4) = √104, scaled by 1/√104.
	sum, norms := ReferenceClippedSum([]Layer[float64]{dense}, 2, []bool{false, true}, nil, 1)
	if r := math.Sqrt(104); math.Abs(norms[1]-r) > 1e-15*r || norms[0] != 0 {
		t.Errorf("norms %v, want [0 √104]", norms)
	}
	for j, want := range []float64{6, 8, 2} {
		if want /= math.Sqrt(104); math.Abs(sum[j]-want) > 1e-15 {
			t.Errorf("clipped sum[%d] = %v, want %v", j, sum[j], want)
		}
	}
}
