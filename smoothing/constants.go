package smoothing

import (
	"fmt"
	"math"
)

// The constants of the DP-LSSGD utility bounds (Theorems 2 and 3). For x ~ N(0, I_d),
// E‖x‖²_{A⁻¹} = d·γ and E‖A⁻¹x‖² = d·β: smoothing shrinks the noise energy by the factor β.

// Gamma returns γ(σ, d) = (1/d) Σ_{i=1..d} 1/λ_i, λ_i = 1 + 2σ − 2σ·cos(2πi/d), by the
// closed form of Proposition 1: γ = (1 + ωᵈ) / ((1 − ωᵈ)·√(1+4σ)) with
// ω = (2σ + 1 − √(1+4σ)) / (2σ). It is also A_σ⁻¹'s diagonal entry.
func Gamma(sigma float64, d int) (float64, error) {
	if err := checkConstantArgs(sigma, d); err != nil {
		return 0, err
	}
	s, omega := sqrtAndOmega(sigma)
	wd := math.Pow(omega, float64(d))
	return (1 + wd) / ((1 - wd) * s), nil
}

// Beta returns β(σ, d) = (1/d) Σ_{i=1..d} 1/λ_i² by the closed form of Proposition 2,
//
//	β = (2ω^{2d+1} − ξω^{2d} + 2ξdωᵈ − 2ω + ξ) / (σ²ξ³(1 − ωᵈ)²),  ξ = −√(1+4σ)/σ,
//
// evaluated with numerator and denominator multiplied by σ, which removes the 1/σ terms
// and makes σ = 0 (β = 1) a regular point.
func Beta(sigma float64, d int) (float64, error) {
	if err := checkConstantArgs(sigma, d); err != nil {
		return 0, err
	}
	s, omega := sqrtAndOmega(sigma)
	fd := float64(d)
	wd := math.Pow(omega, fd)
	w2d := wd * wd
	num := s + 2*sigma*omega + 2*s*fd*wd - s*w2d - 2*sigma*w2d*omega
	den := s * s * s * (1 - wd) * (1 - wd)
	return num / den, nil
}

// Zeta returns ζ(σ, d) = (1+4σ)·√β(σ, d), the factor in the DP-LSSGD nonconvex bound.
func Zeta(sigma float64, d int) (float64, error) {
	b, err := Beta(sigma, d)
	if err != nil {
		return 0, err
	}
	return (1 + 4*sigma) * math.Sqrt(b), nil
}

// GammaSum returns γ(σ, d) by its defining sum (1/d) Σ_{i=1..d} 1/(1 + 2σ − 2σ·cos(2πi/d)),
// in O(d). [Gamma] is the O(1) closed form of the same number.
func GammaSum(sigma float64, d int) (float64, error) {
	return eigenvalueMean(sigma, d, 1)
}

// BetaSum returns β(σ, d) by its defining sum (1/d) Σ_{i=1..d} 1/(1 + 2σ − 2σ·cos(2πi/d))²,
// in O(d). [Beta] is the O(1) closed form of the same number.
func BetaSum(sigma float64, d int) (float64, error) {
	return eigenvalueMean(sigma, d, 2)
}

func eigenvalueMean(sigma float64, d int, power int) (float64, error) {
	if err := checkConstantArgs(sigma, d); err != nil {
		return 0, err
	}
	sum := 0.0
	for i := 1; i <= d; i++ {
		l := 1 + 2*sigma - 2*sigma*math.Cos(2*math.Pi*float64(i)/float64(d))
		if power == 2 {
			l *= l
		}
		sum += 1 / l
	}
	return sum / float64(d), nil
}

func checkConstantArgs(sigma float64, d int) error {
	if d < 1 {
		return fmt.Errorf("%w: length d = %d, want d ≥ 1", ErrInvalid, d)
	}
	return checkSigma(sigma)
}

// sqrtAndOmega returns √(1+4σ) and ω = (2σ + 1 − √(1+4σ))/(2σ), the latter computed as
// 2σ/(2σ + 1 + √(1+4σ)) (the same number, rationalised) to avoid cancellation for small σ;
// ω = 0 at σ = 0.
func sqrtAndOmega(sigma float64) (s, omega float64) {
	s = math.Sqrt(1 + 4*sigma)
	return s, 2 * sigma / (2*sigma + 1 + s)
}
