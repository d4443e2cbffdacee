package erm

import "math"

// Squared is the squared loss l(z, y) = (z − y)²/2 of ridge regression:
// 1-smooth, with no global Lipschitz bound (gradient-perturbation methods
// reject it; DP-SCD bounds its steps by clipping instead).
type Squared struct{}

// Name returns "squared".
func (Squared) Name() string { return "squared" }

// Value returns (z − y)²/2.
func (Squared) Value(z, y float64) float64 { return 0.5 * (z - y) * (z - y) }

// Deriv returns z − y.
func (Squared) Deriv(z, y float64) float64 { return z - y }

// Deriv2 returns 1.
func (Squared) Deriv2(z, y float64) float64 { return 1 }

// Lipschitz returns +Inf.
func (Squared) Lipschitz() float64 { return math.Inf(1) }

// Smoothness returns 1.
func (Squared) Smoothness() float64 { return 1 }

// Classification returns false.
func (Squared) Classification() bool { return false }

// negConjugate returns l*(−a) = a²/2 − a y (l*(u) = u²/2 + u y).
func (Squared) negConjugate(a, y float64) float64 { return 0.5*a*a - a*y }

// dualStep is the exact minimiser of a²-quadratic h(ζ) = (a+ζ)²/2 − (a+ζ)y +
// m ζ + (s/2)ζ²: ζ = (y − a − m)/(1 + s), which with m = xᵀθ and
// s = L‖x‖²/(λN) is the DP-SCD authors' ridge update.
func (Squared) dualStep(a, y, m, s, _ float64, _ int) float64 { return (y - a - m) / (1 + s) }
