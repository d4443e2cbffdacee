package privacycmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestMain keeps every test off the user's budget store.
func TestMain(m *testing.M) { os.Exit(clitest.RunWithTempBudgetStore(m)) }

const fpA = "aaaa0000000000000000000000000000000000000000000000000000000000aa"
const fpB = "bbbb0000000000000000000000000000000000000000000000000000000000bb"

// gaussianEpsilon is the exact ε at δ of T steps of the Gaussian mechanism (q = 1) with
// noise multiplier z: one Gaussian with σ = z/√T, δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) −
// εσ) (Balle and Wang 2018), inverted by bisection.
func gaussianEpsilon(T int, z, delta float64) float64 {
	s := z / math.Sqrt(float64(T))
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	d := func(e float64) float64 { return phi(1/(2*s)-e*s) - math.Exp(e)*phi(-1/(2*s)-e*s) }
	lo, hi := 0.0, 64.0
	for range 200 {
		if mid := (lo + hi) / 2; d(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func budgetStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := budget.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	seg := func(steps int) budget.Spend {
		return budget.SegmentSpend("rdp", []accountant.Segment{{Q: 1, Z: 8, Steps: steps}})
	}
	for _, r := range []struct {
		fp      string
		planned int
		ran     int // −1: not settled
		delta   float64
	}{{fpA, 10, 6, 1e-5}, {fpA, 4, -1, 1e-6}, {fpB, 3, 3, 1e-5}} {
		res, err := s.Reserve(r.fp, budget.Run{Tool: "train", Name: "data-" + r.fp[:4], Command: "train …", Delta: r.delta}, seg(r.planned), 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.ran >= 0 {
			if _, err := res.Commit(seg(r.ran)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func runPrivacy(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// privacy budget -json lists each data set with its composed ε: data set A has 6 settled
// steps and 4 unsettled (counted as planned), reported at its smallest δ (1e-6).
func TestBudgetJSON(t *testing.T) {
	dir := budgetStore(t)
	code, out, errs := runPrivacy("budget", "-json", "-store", dir)
	if code != exit.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Datasets []struct {
			Fingerprint string   `json:"fingerprint"`
			Name        string   `json:"name"`
			Runs        int      `json:"runs"`
			Epsilon     *float64 `json:"epsilon"`
			Delta       float64  `json:"delta"`
			Steps       int      `json:"steps"`
			Unsettled   int      `json:"unsettled_runs"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Datasets) != 2 {
		t.Fatalf("%d data sets: %s", len(got.Datasets), out)
	}
	for _, c := range []struct {
		fp                     string
		runs, steps, unsettled int
		delta                  float64
	}{{fpA, 2, 10, 1, 1e-6}, {fpB, 1, 3, 0, 1e-5}} {
		var d = got.Datasets[0]
		if c.fp == fpB {
			d = got.Datasets[1]
		}
		want := gaussianEpsilon(c.steps, 8, c.delta)
		if d.Fingerprint != c.fp || d.Name != "data-"+c.fp[:4] || d.Runs != c.runs || d.Steps != c.steps || d.Unsettled != c.unsettled || d.Delta != c.delta ||
			d.Epsilon == nil || *d.Epsilon < want-1e-9 || *d.Epsilon > want*1.002 {
			t.Errorf("data set %s: %+v; want %d runs, %d steps, ε ≈ %v at δ = %v", c.fp[:4], d, c.runs, c.steps, want, c.delta)
		}
	}
	// -delta chooses the δ.
	code, out, _ = runPrivacy("budget", "-json", "-store", dir, "-delta", "1e-3")
	if code != exit.OK || !strings.Contains(out, `"delta": 0.001`) {
		t.Errorf("-delta 1e-3: exit %d: %s", code, out)
	}
}

func TestBudgetRunsAndErrors(t *testing.T) {
	dir := budgetStore(t)
	code, out, errs := runPrivacy("budget", "-store", dir, "-fingerprint", "aaaa")
	if code != exit.OK || !strings.Contains(out, fpA) || strings.Count(out, "train …") != 2 || !strings.Contains(out, "unsettled (counted at the 4 planned steps)") {
		t.Errorf("-fingerprint aaaa: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runPrivacy("budget", "-store", dir)
	if code != exit.OK || !strings.Contains(out, fpA[:16]) || !strings.Contains(out, "1 unsettled") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	if code, _, errs := runPrivacy("budget", "-store", dir, "-fingerprint", "cc"); code != exit.Usage || !strings.Contains(errs, "no data set") {
		t.Errorf("unknown fingerprint: exit %d %s", code, errs)
	}
	if code, _, _ := runPrivacy("budget", "-store", dir, "-delta", "2"); code != exit.Usage {
		t.Errorf("-delta 2: exit %d", code)
	}
	// A removed middle entry: exit 1, naming the data set and the entry.
	p := filepath.Join(dir, fpA+".ledger")
	b, _ := os.ReadFile(p)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(p, []byte(lines[0]+strings.Join(lines[2:], "")), 0o600)
	for _, args := range [][]string{{"budget", "-store", dir}, {"budget", "-store", dir, "-json"}, {"budget", "-store", dir, "-fingerprint", fpA}} {
		code, out, errs := runPrivacy(args...)
		if code != exit.Failure || !strings.Contains(errs, fpA) || !strings.Contains(errs, "entry 1") || out != "" {
			t.Errorf("%q on a tampered store: exit %d, stdout %q, stderr %s", args, code, out, errs)
		}
	}
	// An empty or missing store lists nothing and creates nothing.
	missing := filepath.Join(t.TempDir(), "none")
	if code, out, _ := runPrivacy("budget", "-store", missing, "-json"); code != exit.OK || !strings.Contains(out, `"datasets": []`) {
		t.Errorf("missing store: exit %d %s", code, out)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("listing created the store")
	}
}

// Issue 40, items 2 and 7: privacy budget prints each data set's head (text and -json):
// its last entry and that entry's hash, as the ledger file holds them; -seal keys a
// ledger with PRIVTRAIN_BUDGET_KEY (refused without it), after which listing needs the
// key and names it.
func TestBudgetHeadAndSeal(t *testing.T) {
	dir := budgetStore(t)
	// The head, read independently from the ledger file: its last line's hash.
	b, err := os.ReadFile(filepath.Join(dir, fpA+".ledger"))
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	hashOf := func(line string) string {
		h, _, _ := strings.Cut(line, " ")
		_, h, _ = strings.Cut(h, ":")
		return h
	}
	last, first := hashOf(ls[len(ls)-1]), hashOf(ls[0])
	code, out, errs := runPrivacy("budget", "-json", "-store", dir)
	if code != exit.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Datasets []struct {
			Fingerprint string `json:"fingerprint"`
			Sealed      bool   `json:"sealed"`
			Head        struct {
				Seq    int    `json:"seq"`
				Hash   string `json:"hash"`
				Ledger string `json:"ledger"`
			} `json:"head"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if h := got.Datasets[0].Head; got.Datasets[0].Fingerprint != fpA || h.Seq != len(ls)-1 || h.Hash != last || h.Ledger != first || got.Datasets[0].Sealed {
		t.Errorf("-json data set A: %+v; want head %d %s of ledger %s, not sealed", got.Datasets[0], len(ls)-1, last, first)
	}
	code, out, _ = runPrivacy("budget", "-store", dir)
	if code != exit.OK || !strings.Contains(out, fmt.Sprintf("%d:%s", len(ls)-1, last[:16])) {
		t.Errorf("table without the head %d:%s: exit %d\n%s", len(ls)-1, last[:16], code, out)
	}
	code, out, _ = runPrivacy("budget", "-store", dir, "-fingerprint", fpA)
	if code != exit.OK || !strings.Contains(out, fmt.Sprintf("head: entry %d, hash %s", len(ls)-1, last)) {
		t.Errorf("-fingerprint without the whole head: exit %d\n%s", code, out)
	}
	// -seal needs the key.
	os.Unsetenv("PRIVTRAIN_BUDGET_KEY")
	if code, _, errs := runPrivacy("budget", "-seal", "-store", dir, "-fingerprint", "aaaa"); code != exit.Usage || !strings.Contains(errs, "PRIVTRAIN_BUDGET_KEY") {
		t.Errorf("-seal without the key: exit %d %s", code, errs)
	}
	t.Setenv("PRIVTRAIN_BUDGET_KEY", "a budget key of 16+ bytes")
	if code, out, errs := runPrivacy("budget", "-seal", "-store", dir, "-fingerprint", "aaaa"); code != exit.OK || !strings.Contains(out, fpA+": sealed") {
		t.Errorf("-seal: exit %d %s%s", code, out, errs)
	}
	if code, out, _ := runPrivacy("budget", "-seal", "-store", dir, "-fingerprint", "aaaa"); code != exit.OK || !strings.Contains(out, "already sealed") {
		t.Errorf("-seal twice: exit %d %s", code, out)
	}
	code, out, _ = runPrivacy("budget", "-json", "-store", dir)
	if code != exit.OK || !strings.Contains(out, `"sealed": true`) || strings.Count(out, `"sealed": false`) != 1 {
		t.Errorf("after sealing A: exit %d %s", code, out)
	}
	os.Unsetenv("PRIVTRAIN_BUDGET_KEY")
	if code, _, errs := runPrivacy("budget", "-store", dir); code != exit.Failure || !strings.Contains(errs, "PRIVTRAIN_BUDGET_KEY") || !strings.Contains(errs, fpA) {
		t.Errorf("a sealed store listed without the key: exit %d %s", code, errs)
	}
}
