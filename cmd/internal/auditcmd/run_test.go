package auditcmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/audit"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/faults"
)

func runArgs(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestJSONHasTheIssueFields(t *testing.T) {
	code, out, stderr := runArgs("-canaries", "400", "-real", "300", "-seed", "3", "-json")
	if code != exit.OK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	for _, k := range []string{"epsilon", "empirical_epsilon_lower_bound", "canaries", "guesses", "correct_guesses", "confidence", "delta"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("-json output lacks %q: %s", k, out)
		}
	}
	var r audit.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// The same seed through the library gives the same audit.
	seed := uint64(3)
	want, err := audit.Run(t.Context(), audit.Config{Common: audit.Common{Epochs: 40, Seed: &seed}, Canaries: 400, RealExamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if r.Canaries != 400 || r.Confidence != 0.95 || r.Delta != 1e-5 || r.EmpiricalEpsilonLowerBound != want.EmpiricalEpsilonLowerBound || r.Epsilon != want.Epsilon || r.Correct != want.Correct {
		t.Errorf("command %+v, library %+v", r, want)
	}
}

func TestTextReport(t *testing.T) {
	code, out, stderr := runArgs("-canaries", "200", "-real", "200", "-seed", "1", "-noise", "1.5")
	if code != exit.OK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"empirical ε", "accountant ε", "95% confidence", "canaries        200", "correct of", "z = 1.5", "seeded(1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-canaries", "1"}, {"-epsilon", "0"}, {"-epsilon", "-1"}, {"-noise", "0"}, {"-noise", "1", "-epsilon", "2"},
		{"-delta", "1"}, {"-delta", "0"}, {"-confidence", "1"}, {"-clip", "-1"}, {"-epochs", "0"},
		{"-guesses", "3"}, {"-guesses", "x"}, {"-canaries", "100", "-guesses", "200"}, {"-seed", "-5"},
		{"-resume-after", "-1"}, {"-score", "loss"}, {"-bogus"}, {"extra"}, {"-canaries", "100", "-real", "10", "-resume-after", "100000"},
		{"-mode", "two-run"}, {"-runs", "10"}, {"-mode", "multi-run", "-canaries", "10"}, {"-mode", "multi-run", "-score", "accumulated-update"},
		{"-mode", "multi-run", "-runs", "1"}, {"-mode", "multi-run", "-filler", "0"}, {"-mode", "multi-run", "-dim", "0"},
		{"-mode", "multi-run", "-batch", "3"}, {"-mode", "multi-run", "-runs", "10", "-guesses", "20"},
	} {
		code, out, stderr := runArgs(args...)
		if code != exit.Usage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "audit: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line", args, code, out, stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runArgs("-help")
	if code != exit.OK || !strings.Contains(out, "-canaries") || !strings.Contains(out, "Theorem 1") {
		t.Errorf("-help: exit %d, %q", code, out)
	}
}

func TestFlaggedExitStatus(t *testing.T) {
	faults.Enable(t, faults.NoNoise)
	code, out, _ := runArgs("-canaries", "400", "-real", "300", "-seed", "2")
	if code != exitFlagged || !strings.Contains(out, "FLAGGED") {
		t.Errorf("noise off: exit %d, want %d:\n%s", code, exitFlagged, out)
	}
}

func TestMultiRunJSON(t *testing.T) {
	code, out, stderr := runArgs("-mode", "multi-run", "-runs", "40", "-seed", "2", "-json")
	if code != exit.OK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var r audit.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	seed := uint64(2)
	want, err := audit.RunMulti(t.Context(), audit.MultiConfig{Common: audit.Common{Seed: &seed}, Runs: 40})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != "multi-run" || r.Runs != 40 || r.Steps != 100 || r.EmpiricalEpsilonLowerBound != want.EmpiricalEpsilonLowerBound || r.Epsilon != want.Epsilon || r.Correct != want.Correct {
		t.Errorf("command %+v, library %+v", r, want)
	}
}

func TestMultiRunFlagsRealisedBatch(t *testing.T) {
	faults.Enable(t, faults.RealisedBatch)
	code, out, _ := runArgs("-mode", "multi-run", "-seed", "4")
	if code != exitFlagged || !strings.Contains(out, "FLAGGED") || !strings.Contains(out, "runs            200, one canary each") {
		t.Errorf("realised batch: exit %d, want %d:\n%s", code, exitFlagged, out)
	}
}
