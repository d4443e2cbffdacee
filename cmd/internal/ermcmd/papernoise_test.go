package ermcmd

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestPaperNoiseReport: erm -paper-noise 1 -solver dp-gd-pl runs eq. (11) as printed and
// says it is not DP at the printed ε. Closed forms (n = 2000, T = 50, ε = 1, δ = 1e-3,
// G = 1, c = 1): σ = √(50·ln 1000)/2000 = 0.00929230547; its zCDP ε is
// ρ + 2√(ρ ln(1/δ)) with ρ = 2T/(n²σ²) = 2ε²/(c ln(1/δ)) = 0.28953, i.e.
// 2ε²/ln(1/δ) + 2√2·ε = 3.11795678. The budget store holds that proven ε, not 1.
func TestPaperNoiseReport(t *testing.T) {
	store := t.TempDir()
	args := []string{"-solver", "dp-gd-pl", "-synthetic", "-normalize", "-n", "2000", "-d", "5", "-iters", "50",
		"-epsilon", "1", "-delta", "1e-3", "-paper-noise", "1", "-seed", "1", "-budget-store", store}
	code, stdout, stderr := runCapture(append(args, "-json")...)
	if code != exit.OK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	const sigma, proven = 0.009292305472124595, 3.117956779348358
	if rep.Paper == nil || rep.Paper.Equation != "eq. (11)" || rep.Paper.C != 1 || rep.Paper.PrintedEpsilon != 1 ||
		math.Abs(rep.Paper.Sigma-sigma) > 1e-12 {
		t.Fatalf("paper_noise %+v: want eq. (11), c = 1, printed ε 1, σ = %.12g", rep.Paper, sigma)
	}
	if !strings.HasPrefix(rep.Paper.Note, "not DP at the printed ε") || !strings.Contains(rep.Calibration, "not DP at the printed ε") {
		t.Errorf("note %q / calibration %q: want the label", rep.Paper.Note, rep.Calibration)
	}
	if rep.Epsilon == nil || math.Abs(*rep.Epsilon-proven) > 1e-9 {
		t.Errorf("epsilon %v: want the proven ε of σ, %.10g", rep.Epsilon, proven)
	}
	if !strings.Contains(stdout, `"paper_noise":{`) || !strings.Contains(stdout, `"printed_epsilon":1`) {
		t.Errorf("JSON lacks paper_noise: %s", stdout)
	}
	s, _ := budget.Open(store, nil)
	ds, err := s.Datasets(0)
	if err != nil || len(ds) != 1 || ds[0].Unsettled != 0 || math.Abs(ds[0].Epsilon-proven) > 1e-6 {
		t.Fatalf("store: %+v %v; want one settled run at the proven ε %.6g", ds, err, proven)
	}
	// The text report carries the label on its privacy line.
	code, stdout, stderr = runCapture(args...)
	if code != exit.OK || !strings.Contains(stdout, "privacy      not DP at the printed ε (ε = 1 from the paper's eq. (11) with c = 1); a proven accountant gives ε = 3.118") {
		t.Errorf("exit %d, text report:\n%s%s", code, stdout, stderr)
	}
}

// TestPaperNoiseRefused: bad -paper-noise values, solvers without a paper formula and
// -epsilon inf exit 2 with one line naming -paper-noise.
func TestPaperNoiseRefused(t *testing.T) {
	base := []string{"-synthetic", "-n", "300", "-d", "3", "-normalize"}
	for _, c := range [][]string{
		{"-solver", "dp-svrg", "-paper-noise", "0"},
		{"-solver", "dp-svrg", "-paper-noise", "-1"},
		{"-solver", "dp-svrg", "-paper-noise", "NaN"},
		{"-solver", "dp-svrg", "-paper-noise", "inf"},
		{"-solver", "dp-svrg", "-paper-noise", "one"},
		{"-solver", "dp-scd", "-paper-noise", "1"},
		{"-solver", "dp-accmd", "-radius", "1", "-paper-noise", "1"},
		{"-solver", "dp-gd-pl", "-epsilon", "inf", "-iters", "5", "-paper-noise", "1"},
	} {
		code, _, stderr := runCapture(append(base, c...)...)
		if code != exit.Usage || !strings.Contains(stderr, "-paper-noise") {
			t.Errorf("%v: exit %d, %q; want 2 naming -paper-noise", c, code, stderr)
		}
		if c[1] != "dp-svrg" && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: want one line, got %q", c, stderr)
		}
	}
}
