package ermcmd

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBallFlag checks -ball: bad values and -ball l1 with another solver are
// usage errors naming -ball; -ball l1 runs DP-AccMD on the L1 ball against
// the L1-ball optimum; the default is the L2 ball and -ball l2 is the same
// run byte for byte.
func TestBallFlag(t *testing.T) {
	for _, args := range [][]string{
		{"-synthetic", "-normalize", "-solver", "dp-accmd", "-radius", "1", "-ball", "linf"},
		{"-synthetic", "-normalize", "-solver", "dp-gd", "-ball", "l1"},
	} {
		code, _, stderr := runCapture(args...)
		if code != 2 || !strings.Contains(stderr, "-ball") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q: want 2 and one line naming -ball", args, code, stderr)
		}
	}
	base := []string{"-solver", "dp-accmd", "-synthetic", "-normalize", "-n", "1500", "-d", "10",
		"-lambda", "0", "-radius", "2", "-iters", "60", "-seed", "4", "-json"}
	code, out, stderr := runCapture(append(base, "-ball", "l1")...)
	if code != 0 {
		t.Fatalf("-ball l1: exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if r["ball"] != "l1" || !strings.Contains(r["method"].(string), "L1 ball") || !strings.Contains(r["calibration"].(string), "L1 ball") {
		t.Errorf("-ball l1 report: ball %v, method %v, calibration %v", r["ball"], r["method"], r["calibration"])
	}
	// An excess risk against the L1-ball optimum is ≥ 0 (up to its
	// certificate); against the looser L2 ball's optimum it could be negative.
	if ex := r["excess_risk"].(float64); ex < -r["optimum_certified_gap"].(float64)-1e-12 {
		t.Errorf("excess risk %v < 0", ex)
	}
	if eps := r["epsilon"].(float64); eps > 1+1e-9 {
		t.Errorf("spent ε = %v > 1", eps)
	}
	_, l2, _ := runCapture(base...)
	_, l2Explicit, _ := runCapture(append(base, "-ball", "l2")...)
	if l2 != l2Explicit {
		t.Error("-ball l2 differs from the default")
	}
	if strings.Contains(l2, `"ball"`) || !strings.Contains(l2, "L2 ball") {
		t.Errorf("default run's report changed: %s", l2)
	}
	if l2 == out {
		t.Error("-ball l1 gave the L2 ball's run")
	}
}
