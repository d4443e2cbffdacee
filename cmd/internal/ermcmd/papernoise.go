package ermcmd

import (
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/erm"
)

// -paper-noise C: the Wang–Ye–Xu solvers draw σ from the paper's printed formula with
// constant c = C (erm.PaperCalibration) instead of a proven accountant. Such a run is not
// DP at the -epsilon it was given: the report says so, prints (and -json carries) the ε a
// proven accountant gives for that σ, and the budget store records that proven ε, never
// the printed one (see paperSpend).

// paperNoiseSolvers are the solvers that take -paper-noise, with the equation each uses.
var paperNoiseSolvers = map[string]string{"dp-svrg": "eq. (3)", "dp-svrg++": "eq. (6)", "dp-gd-pl": "eq. (11)"}

// paperNoiseFlag is -paper-noise: unset is 0 (the proven calibration); a set value must be
// a finite number > 0.
type paperNoiseFlag struct {
	c   *float64
	set *bool
}

func (f paperNoiseFlag) String() string {
	if f.c == nil || *f.c == 0 {
		return ""
	}
	return strconv.FormatFloat(*f.c, 'g', -1, 64)
}

func (f paperNoiseFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 1) {
		return fmt.Errorf("want the paper's constant c, a finite number > 0 (the paper's runs: 1)")
	}
	*f.c, *f.set = v, true
	return nil
}

func addPaperNoiseFlag(fs *flag.FlagSet, o *trainOptions) {
	fs.Var(paperNoiseFlag{&o.paperC, &o.paperSet}, "paper-noise", "`c`: dp-svrg, dp-svrg++, dp-gd-pl draw σ from the Wang–Ye–Xu paper's printed formula with constant c (eq. 3, 6, 11; c = 1 as printed) instead of a proven accountant, to compare the paper's accounting with its algorithm. NOT DP at the printed ε: the run reports, and records in the budget store, the ε a proven accountant gives for that σ")
}

// validatePaperNoise checks -paper-noise against the solver and -epsilon.
func (o *trainOptions) validatePaperNoise() error {
	if !o.paperSet {
		return nil
	}
	if _, ok := paperNoiseSolvers[o.solver]; !ok {
		return exit.Usagef("erm: -paper-noise: only dp-svrg, dp-svrg++ and dp-gd-pl have a paper formula to use (-solver %s)", o.solver)
	}
	if math.IsInf(o.epsilon, 1) {
		return exit.Usagef("erm: -paper-noise: needs a finite -epsilon (the formula divides by ε; -epsilon inf is the noise-off reference)")
	}
	return nil
}

// paperReport is -json's "paper_noise" object: the formula and the ε it was evaluated at.
type paperReport struct {
	Equation       string  `json:"equation"`
	C              float64 `json:"c"`
	Sigma          float64 `json:"sigma"`
	PrintedEpsilon float64 `json:"printed_epsilon"`
	Note           string  `json:"note"` // erm.NotDP, with the proven ε
}

// paperFields fills the report of a paper-calibrated run: "epsilon" is the proven ε of
// the σ used (null where no finite bound exists, with the note saying so).
func paperFields(rep *report, res *erm.Result) {
	pc := res.Paper
	note := fmt.Sprintf("%s (ε = %g from the paper's %s with c = %g); a proven accountant gives ε = %.4g, δ = %g for this σ", erm.NotDP, pc.Epsilon, pc.Equation, pc.C, res.Epsilon, res.Delta)
	if math.IsInf(res.Epsilon, 1) {
		note = fmt.Sprintf("%s (ε = %g from the paper's %s with c = %g); a proven accountant gives no finite ε for this σ", erm.NotDP, pc.Epsilon, pc.Equation, pc.C)
	}
	rep.Paper = &paperReport{Equation: pc.Equation, C: pc.C, Sigma: pc.Sigma, PrintedEpsilon: pc.Epsilon, Note: note}
}
