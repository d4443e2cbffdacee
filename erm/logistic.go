package erm

import "math"

// Logistic is the logistic loss l(z, y) = log(1 + exp(−y z)) for y ∈ {−1, +1}:
// 1-Lipschitz and 1/4-smooth in z.
type Logistic struct{}

// Name returns "logistic".
func (Logistic) Name() string { return "logistic" }

// Value returns log(1 + exp(−y z)), without overflow for large |z|.
func (Logistic) Value(z, y float64) float64 { return softplus(-y * z) }

// Deriv returns −y·σ(−y z), σ the logistic function.
func (Logistic) Deriv(z, y float64) float64 { return -y * sigmoid(-y*z) }

// Deriv2 returns σ(y z)·σ(−y z).
func (Logistic) Deriv2(z, y float64) float64 {
	s := sigmoid(y * z)
	return s * (1 - s)
}

// Lipschitz returns 1.
func (Logistic) Lipschitz() float64 { return 1 }

// Smoothness returns 1/4.
func (Logistic) Smoothness() float64 { return 0.25 }

// Classification returns true.
func (Logistic) Classification() bool { return true }

// negConjugate returns l*(−a) = s log s + (1−s) log(1−s) with s = y a ∈ [0,1]
// (the dual of logistic regression), +Inf outside.
func (Logistic) negConjugate(a, y float64) float64 {
	s := y * a
	if s < 0 || s > 1 {
		return math.Inf(1)
	}
	return xlogx(s) + xlogx(1-s)
}

// dualStep minimises h(ζ) = l*(−(a+ζ)) + m ζ + (s/2) ζ² over ζ, the
// DP-SCD subproblem (8) multiplied by N with m = xᵀθ and s = L‖x‖²/(λN).
// In t = y(a+ζ) ∈ (0,1) the optimality condition is
// φ(t) = log(t/(1−t)) + y m + s (t − y a) = 0, strictly increasing in t, so a
// safeguarded Newton iteration on φ with the bracket (0,1) finds the root.
// newtonSteps > 0 instead takes that many plain Newton steps from
// t₀ = clip(y a) as the authors' code does (one step), re-clipping to the box.
// The result keeps t in [box, 1−box] so the logarithms stay finite.
func (Logistic) dualStep(a, y, m, s, box float64, newtonSteps int) float64 {
	ya := y * a
	phi := func(t float64) (float64, float64) {
		return math.Log(t/(1-t)) + y*m + s*(t-ya), 1/(t*(1-t)) + s
	}
	box = max(box, 1e-12)
	t := min(max(ya, box), 1-box)
	if newtonSteps > 0 {
		for range newtonSteps {
			f, df := phi(t)
			t = min(max(t-f/df, box), 1-box)
		}
		return y*t - a
	}
	lo, hi := 0.0, 1.0
	for range 200 {
		f, df := phi(t)
		if f > 0 {
			hi = t
		} else {
			lo = t
		}
		next := t - f/df
		if !(next > lo && next < hi) {
			next = 0.5 * (lo + hi) // Newton left the bracket: bisect
		}
		if math.Abs(next-t) <= 1e-15*t || hi-lo <= 1e-16 {
			t = next
			break
		}
		t = next
	}
	t = min(max(t, box), 1-box)
	return y*t - a
}

func softplus(u float64) float64 {
	if u > 0 {
		return u + math.Log1p(math.Exp(-u))
	}
	return math.Log1p(math.Exp(u))
}

func sigmoid(u float64) float64 {
	if u >= 0 {
		return 1 / (1 + math.Exp(-u))
	}
	e := math.Exp(u)
	return e / (1 + e)
}

func xlogx(x float64) float64 {
	if x == 0 {
		return 0
	}
	return x * math.Log(x)
}
