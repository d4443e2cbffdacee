package erm

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
)

// The DP-ERM-revisited paper's own noise formulas, for comparison runs only.
//
// Its Theorems 4.1, 4.3 and 6.1 state the noise of DP-SVRG, DP-SVRG++ and
// DP-GD with an unspecified constant c (and, for 4.1 and 4.3, a condition
// ε ≤ c₁·Tm/n² resp. ε ≤ c₁·2^T m/n² with an unspecified c₁):
//
//	eq. (3)  DP-SVRG:   σ² = c G² T m ln(1/δ) / (n² ε²)
//	eq. (6)  DP-SVRG++: σ² = c G² 2^T m ln(2/δ) / (n² ε²)
//	eq. (11) DP-GD:     σ² = c G² T ln(1/δ) / (n² ε²)
//
// erm's solvers calibrate σ with proven accountants instead (gaussiancalibration.go).
// Setting PaperConstant = c > 0 on SVRG, SVRGPlusPlus or GDPL draws the noise
// from the formula as printed (2^T m and ln(2/δ) for DP-SVRG++ as in eq. (6),
// although its proof counts 2^{T+1}m queries), so that the paper's accounting
// and its algorithm can be told apart. Such a run is NOT (ε, δ)-DP at the
// Epsilon it was asked for: its Result.Epsilon is what the solver's proven
// accountant gives for the σ actually used (an upper bound on what the run
// spent; +Inf where no order gives a finite bound), and Result.Paper records
// the formula, c, σ and the ε the formula was evaluated at.

// PaperCalibration describes noise drawn from one of the paper's printed
// formulas (PaperConstant). Its Epsilon is the ε the formula was evaluated
// at: not a privacy guarantee.
type PaperCalibration struct {
	Equation string  // "eq. (3)", "eq. (6)" or "eq. (11)"
	C        float64 // the constant c
	Sigma    float64 // the σ per coordinate the formula gives (and the run used)
	Epsilon  float64 // the ε the formula was evaluated at: NOT a guarantee
}

// NotDP is the label every report of a paper-calibrated run carries.
const NotDP = "not DP at the printed ε"

// newPaperCalibration is the calibration of equation eq with constant c at ε = eps:
// σ = G·√(c·queries·logTerm)/(n·ε), with queries = T·m (eq. 3), 2^T·m (eq. 6) or
// T (eq. 11) and logTerm = ln(1/δ) or ln(2/δ).
func newPaperCalibration(eq string, c, eps, G, queries, logTerm float64, n int) *PaperCalibration {
	return &PaperCalibration{Equation: eq, C: c, Epsilon: eps, Sigma: G * math.Sqrt(c*queries*logTerm) / (float64(n) * eps)}
}

// svrgSigma is the noise of the DP-SVRG variants: pc's σ with the proven ε the
// accountant gives for it (svrgEpsilon), or with pc nil σ calibrated to eps
// (svrgNoise).
func svrgSigma(pc *PaperCalibration, eps, delta float64, steps, n, batch int, G float64, opts []accountant.Option) (sigma, achieved, split float64, err error) {
	if pc == nil {
		return svrgNoise(eps, delta, steps, n, batch, G, opts)
	}
	achieved, split, err = svrgEpsilon(pc.Sigma, delta, steps, n, batch, G, opts)
	return pc.Sigma, achieved, split, err
}

// checkPaperConstant validates PaperConstant (0: off) for a run at eps.
func checkPaperConstant(c, eps float64) error {
	if c == 0 {
		return nil
	}
	if !(c > 0) || math.IsInf(c, 1) {
		return fmt.Errorf("erm: PaperConstant = %v: must be a finite number > 0 (0: the proven calibration): %w", c, ErrInvalid)
	}
	if math.IsInf(eps, 1) {
		return fmt.Errorf("erm: PaperConstant needs a finite ε (the paper's formula divides by it; ε = +Inf is the noise-off reference): %w", ErrInvalid)
	}
	return nil
}

// paperNote is the calibration line's account of a paper-calibrated run.
func paperNote(pc *PaperCalibration, provenEps float64) string {
	proven := fmt.Sprintf("the proven accountant gives ε = %.4g for this σ", provenEps)
	if math.IsInf(provenEps, 1) {
		proven = "the proven accountant gives no finite ε for this σ"
	}
	return fmt.Sprintf("%s: σ from the paper's %s with c = %g at ε = %g (%s)", NotDP, pc.Equation, pc.C, pc.Epsilon, proven)
}
