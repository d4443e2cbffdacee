package data

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/internal/privrand"
)

// SyntheticL1Bound is the L1 radius of the covariate domain U of the DP
// accelerated methods paper (Sec. 5: U = {u : ‖u‖₁ ≤ 20}), which gives its
// L1 sensitivity S1 = 2·20 = 40 for logistic regression (eq. 36).
const SyntheticL1Bound = 20

// Synthetic draws the logistic-regression data of the DP accelerated methods
// paper (Sec. 5; n = 1e5 and d = 20 there): covariates u_i uniform on
// [0,1]^d (rescaled onto the L1 ball of radius 20 if they leave it, which
// cannot happen for d ≤ 20), a true parameter w ~ N(0, I_d) and labels
// z_i = sign(u_iᵀw) ∈ {-1, +1} (sign 0 counts as +1). It is deterministic
// in seed; the authors' MATLAB rng(1) stream cannot be reproduced, so the
// data differ from theirs draw by draw but not in distribution.
//
// The result declares L1Bound = 20 and L2Bound = √min(d, 20), which hold for
// every draw (‖u‖₂² ≤ ‖u‖₁‖u‖_∞ ≤ min(d, 20)).
func Synthetic(n, d int, seed uint64) (*Dataset, error) {
	if n < 1 || d < 1 {
		return nil, fmt.Errorf("data: synthetic data needs n ≥ 1 and d ≥ 1, got n = %d, d = %d: %w", n, d, ErrInvalid)
	}
	if n > (1<<31)/d {
		return nil, fmt.Errorf("data: synthetic data of %d×%d is too large: %w", n, d, ErrInvalid)
	}
	rng := privrand.NewSeeded(seed, privrand.SyntheticData).Rand()
	w := make([]float64, d)
	for j := range w {
		w[j] = rng.NormFloat64()
	}
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for i := range n {
		row := x.RawRowView(i)
		for j := range row {
			row[j] = rng.Float64()
		}
		if l1 := floats.Norm(row, 1); l1 > SyntheticL1Bound {
			floats.Scale(SyntheticL1Bound/l1, row)
		}
		y[i] = 1
		if floats.Dot(row, w) < 0 {
			y[i] = -1
		}
	}
	return &Dataset{
		X:       x,
		Y:       y,
		L1Bound: SyntheticL1Bound,
		L2Bound: math.Sqrt(float64(min(d, SyntheticL1Bound))),
	}, nil
}
