package erm

import "math"

// Hinge is the SVM hinge loss l(z, y) = max(0, 1 − y z) for y ∈ {−1, +1}:
// 1-Lipschitz, not smooth. Gradient methods use the subgradient −y at the
// kink's left; DP-SCD and the reference optimum work on the dual.
type Hinge struct{}

// Name returns "hinge".
func (Hinge) Name() string { return "hinge" }

// Value returns max(0, 1 − y z).
func (Hinge) Value(z, y float64) float64 { return max(0, 1-y*z) }

// Deriv returns −y where y z < 1 and 0 elsewhere.
func (Hinge) Deriv(z, y float64) float64 {
	if y*z < 1 {
		return -y
	}
	return 0
}

// Deriv2 returns 0.
func (Hinge) Deriv2(z, y float64) float64 { return 0 }

// Lipschitz returns 1.
func (Hinge) Lipschitz() float64 { return 1 }

// Smoothness returns +Inf.
func (Hinge) Smoothness() float64 { return math.Inf(1) }

// Classification returns true.
func (Hinge) Classification() bool { return true }

// negConjugate returns l*(−a) = −a y for y a ∈ [0,1], +Inf outside.
func (Hinge) negConjugate(a, y float64) float64 {
	if t := y * a; t < 0 || t > 1 {
		return math.Inf(1)
	}
	return -a * y
}

// dualStep minimises h(ζ) = −(a+ζ) y + m ζ + (s/2) ζ² subject to
// y(a+ζ) ∈ [0,1]: the unconstrained minimiser ζ = (y − m)/s, clipped. With
// m = xᵀθ and s = L‖x‖²/(λN) this is the DP-SCD authors' SVM update
// ζ = y·clip(y a + (λN − y xᵀv)/(L‖x‖²), 0, 1) − a.
func (Hinge) dualStep(a, y, m, s, _ float64, _ int) float64 {
	var t float64
	switch {
	case s > 0:
		t = y*a + (1-y*m)/s
	case 1-y*m > 0: // x = 0: h is linear, decreasing in t
		t = 1
	default:
		t = 0
	}
	return y*min(max(t, 0), 1) - a
}
