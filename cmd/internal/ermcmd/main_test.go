package ermcmd

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCapture(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestBadInput checks every kind of bad input exits 2 with one line naming
// the offending flag.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(corrupt, []byte("1 1:0.5\n-1 0:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	multi := filepath.Join(dir, "multi.txt")
	if err := os.WriteFile(multi, []byte("1 1:0.5\n2 1:2\n3 2:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string // the flag (or text) the message must name
	}{
		{[]string{"-synthetic", "-epsilon", "-1"}, "-epsilon"},
		{[]string{"-synthetic", "-epsilon", "abc"}, "-epsilon"},
		{[]string{"-synthetic", "-epsilon", "NaN"}, "-epsilon"},
		{[]string{"-synthetic", "-delta", "2"}, "-delta"},
		{[]string{"-synthetic", "-delta", "0"}, "-delta"},
		{[]string{"-synthetic", "-solver", "sgd"}, "-solver"},
		{[]string{"-synthetic", "-loss", "huber"}, "-loss"},
		{[]string{"-epsilon", "1"}, "-data"},
		{[]string{"-synthetic", "-data", "x.txt"}, "-data and -synthetic"},
		{[]string{"-data", filepath.Join(dir, "missing.txt")}, "-data"},
		{[]string{"-data", corrupt}, "line 2"},
		{[]string{"-data", multi}, "-data"},
		{[]string{"-synthetic", "-format", "arff"}, "-format"},
		{[]string{"-synthetic", "-sampling", "random"}, "-sampling"},
		{[]string{"-synthetic", "-sampling", "one"}, "-sampling one"}, // dp-scd takes no exactly-one sampling
		{[]string{"-synthetic", "-solver", "dp-svrg++", "-bb"}, "-bb"},
		{[]string{"-synthetic", "-solver", "dp-svrg", "-output", "random-iterate"}, "-output"},
		{[]string{"-synthetic", "-solver", "dp-gd-pl", "-output", "first"}, "-output"},
		{[]string{"-synthetic", "-solver", "dp-accmd"}, "-radius"},
		{[]string{"-synthetic", "-iters", "-3"}, "-iters"},
		{[]string{"-synthetic", "-lambda", "-1"}, "-lambda"},
		{[]string{"-synthetic", "-step", "0"}, "-step"},
		{[]string{"-synthetic", "-n", "0"}, "-n"},
		{[]string{"-synthetic", "extra"}, "unexpected argument"},
		{[]string{"-synthetic", "-nosuchflag"}, "-nosuchflag"},
		{[]string{"-synthetic", "-n", "500", "-d", "5", "-loss", "hinge", "-solver", "dp-nag"}, "-solver"},
		{[]string{"-synthetic", "-n", "500", "-d", "5", "-solver", "dp-scd", "-raw"}, "-solver dp-scd: DP-SCD needs examples of norm ≤ 1"}, // rows of norm > 1 kept by -raw
		{[]string{"-synthetic", "-normalize", "-raw"}, "-normalize and -raw"},
		{[]string{"-synthetic", "-loss", "squared"}, "-loss"},
		{[]string{"reproduce", "-seeds", "1"}, "-seeds"},
		{[]string{"reproduce", "-bogus"}, "-bogus"},
	}
	for _, c := range cases {
		code, _, stderr := runCapture(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
			continue
		}
		if lines := strings.Count(strings.TrimSpace(stderr), "\n"); lines != 0 || stderr == "" {
			t.Errorf("%v: want one line, got %q", c.args, stderr)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: message %q does not name %q", c.args, stderr, c.want)
		}
	}
}

// TestSyntheticDefaults: erm -synthetic runs with its own defaults (issue 41: the
// default solver, dp-scd, refused the unnormalised data with "add -normalize", and
// "erm:" twice): the data are normalised to unit rows for the solver that needs them,
// and the run spends the default ε = 1 at δ = 10⁻³. Other solvers keep the paper's data
// as drawn; -raw keeps them for dp-scd, which then refuses them with one "erm:".
func TestSyntheticDefaults(t *testing.T) {
	code, out, stderr := runCapture("-synthetic", "-seed", "1", "-json")
	if code != 0 {
		t.Fatalf("erm -synthetic: exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	if r["solver"] != "dp-scd" || r["epsilon"].(float64) > 1 || r["delta"].(float64) != 1e-3 || !strings.Contains(r["data"].(string), "normalised to unit rows") {
		t.Errorf("erm -synthetic: %s", out)
	}
	code, out, _ = runCapture("-synthetic", "-n", "500", "-d", "5", "-solver", "dp-nag", "-seed", "1", "-json")
	if code != 0 || strings.Contains(out, "normalised") {
		t.Errorf("-solver dp-nag: exit %d, %s; want the data as drawn", code, out)
	}
	_, _, stderr = runCapture("-synthetic", "-n", "500", "-d", "5", "-raw")
	if strings.Count(stderr, "erm:") != 1 || !strings.HasSuffix(stderr, "(leave out -raw)\n") {
		t.Errorf("-raw: %q; want one \"erm:\" and the hint to leave out -raw", stderr)
	}
}

// TestTrainJSON runs DP-NAG-opt on small synthetic data and checks the JSON
// report is consistent: excess risk = objective − optimum ≥ 0, pure ε spent
// equals the budget, accuracy in [0,1].
func TestTrainJSON(t *testing.T) {
	code, out, stderr := runCapture("-solver", "dp-nag-opt", "-synthetic", "-n", "2000", "-d", "5",
		"-lambda", "0.02", "-iters", "50", "-x0", "1", "-epsilon", "2", "-seed", "3", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	obj, opt, ex := r["objective"].(float64), r["optimum"].(float64), r["excess_risk"].(float64)
	if math.Abs(ex-(obj-opt)) > 1e-12 || ex < 0 {
		t.Errorf("excess risk %v, objective − optimum %v", ex, obj-opt)
	}
	if eps := r["epsilon"].(float64); math.Abs(eps-2) > 1e-9 || r["delta"].(float64) != 0 {
		t.Errorf("privacy (%v, %v), want pure ε = 2", eps, r["delta"])
	}
	if acc := r["accuracy"].(float64); acc < 0 || acc > 1 {
		t.Errorf("accuracy %v", acc)
	}
	if _, ok := r["mse"]; ok {
		t.Error("mse reported for a classification loss")
	}
	// Same seed, same model.
	_, out2, _ := runCapture("-solver", "dp-nag-opt", "-synthetic", "-n", "2000", "-d", "5",
		"-lambda", "0.02", "-iters", "50", "-x0", "1", "-epsilon", "2", "-seed", "3", "-json")
	if out2 != out {
		t.Error("seeded runs differ")
	}
}

// TestTrainSyntheticSCD runs DP-SCD on normalised synthetic data.
func TestTrainSyntheticSCD(t *testing.T) {
	code, out, stderr := runCapture("-solver", "dp-scd", "-synthetic", "-normalize", "-n", "2000", "-d", "5", "-batch", "20", "-seed", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "δ = 0.001") || !strings.Contains(out, "normalised") {
		t.Errorf("report:\n%s", out)
	}
}

// TestTrainText runs the non-private reference (ε = inf) and checks the text
// report says so and reaches the optimum.
func TestTrainText(t *testing.T) {
	code, out, stderr := runCapture("-solver", "dp-gd-pl", "-synthetic", "-n", "1000", "-d", "4",
		"-lambda", "0.1", "-iters", "3000", "-epsilon", "inf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"objective", "excess risk", "accuracy", "ε = ∞ (noise off)", "dp-gd-pl"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestTrainBreastCancer runs DP-SCD on scikit-learn's breast_cancer.csv and
// ridge on its CSV with MSE reported.
func TestTrainBreastCancer(t *testing.T) {
	path := "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv"
	if _, err := os.Stat(path); err != nil {
		t.Skip("breast_cancer.csv not found: install python3-sklearn to run this test")
	}
	code, out, stderr := runCapture("-solver", "dp-scd", "-loss", "logistic", "-data", path,
		"-epsilon", "1", "-delta", "1e-3", "-batch", "20", "-clip", "0.1", "-seed", "1", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r["n"].(float64) != 569 || r["d"].(float64) != 30 {
		t.Errorf("shape %v×%v, want 569×30", r["n"], r["d"])
	}
	if eps := r["epsilon"].(float64); eps > 1 || r["delta"].(float64) != 1e-3 {
		t.Errorf("spent (%v, %v)", eps, r["delta"])
	}
	code, out, stderr = runCapture("-solver", "dp-scd", "-loss", "squared", "-data", path, "-epsilon", "inf", "-epochs", "50", "-batch", "1")
	if code != 0 {
		t.Fatalf("ridge: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "mse") {
		t.Errorf("ridge report lacks the MSE:\n%s", out)
	}
}

// TestReproduceQuick runs the reproduce pipeline on small data and checks the
// file is written with the command line in its header.
func TestReproduceQuick(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results", "erm.md")
	code, stdout, stderr := runCapture("reproduce", "-quick", "-seeds", "2", "-out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, out) {
		t.Errorf("stdout %q does not name the file", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, "`go run ./cmd/erm reproduce -quick -seeds 2 -out "+out+"`") {
		t.Errorf("header lacks the command line:\n%s", s[:min(400, len(s))])
	}
	for _, want := range []string{"| DP-NAG-opt |", "| DP-SCD |", "| DP-SVRG |", "ε = 1", " ± "} {
		if !strings.Contains(s, want) {
			t.Errorf("results lack %q", want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestSeed003Modes runs what issue 25 added for the DP-ERM-revisited paper:
// dp-svrg draws exactly one example per inner step by default (and says so),
// -sampling poisson still works, -bb prints the Barzilai–Borwein rule, and
// dp-gd-pl -output random-iterate says which output it released.
func TestSeed003Modes(t *testing.T) {
	base := []string{"-synthetic", "-normalize", "-n", "300", "-d", "4", "-seed", "1", "-json"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-solver", "dp-svrg", "-epochs", "2"}, "exactly one example drawn uniformly per inner step"},
		{[]string{"-solver", "dp-svrg", "-epochs", "2", "-sampling", "poisson"}, "Poisson sampling"},
		{[]string{"-solver", "dp-svrg++", "-epochs", "2", "-batch", "2"}, "exactly 2 distinct examples"},
		{[]string{"-solver", "dp-svrg", "-epochs", "3", "-inner", "50", "-bb"}, "Barzilai–Borwein"},
		{[]string{"-solver", "dp-gd-pl", "-iters", "20", "-output", "random-iterate"}, "uniform in {0, …, T−1}"},
	}
	for _, c := range cases {
		code, stdout, stderr := runCapture(append(append([]string(nil), base...), c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		var r report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Calibration, c.want) {
			t.Errorf("%v: calibration %q lacks %q", c.args, r.Calibration, c.want)
		}
		if r.Epsilon == nil || *r.Epsilon > 1 {
			t.Errorf("%v: ε %v, want ≤ 1", c.args, r.Epsilon)
		}
	}
}
