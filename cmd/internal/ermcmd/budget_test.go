package ermcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestMain keeps every test off the user's budget store.
func TestMain(m *testing.M) { os.Exit(clitest.RunWithTempBudgetStore(m)) }

// erm records each run's (ε, δ) on its data (the file as loaded: -raw or normalised, one
// data set), composed by basic composition: pure ε = 0.5 plus (1, 1e-3), each run settled
// at the ε its solver achieved (at most its target; DP-SCD's calibration lands within
// 1e-4 below).
func TestBudgetRecorded(t *testing.T) {
	store := t.TempDir()
	p := filepath.Join(t.TempDir(), "d.csv")
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "%g,%g,%d\n", float64(i%7)/7, float64(i%3)/3, 2*(i%2)-1)
	}
	os.WriteFile(p, []byte(b.String()), 0o600)
	for _, args := range [][]string{
		{"-solver", "dp-gd", "-epsilon", "0.5"},
		{"-solver", "dp-scd", "-epsilon", "1", "-delta", "1e-3"},
	} {
		code, _, stderr := runCapture(append(args, "-data", p, "-format", "csv", "-budget-store", store, "-seed", "1")...)
		if code != exit.OK || !strings.Contains(stderr, "budget: data set ") {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	s, _ := budget.Open(store, nil)
	ds, err := s.Datasets(0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("%+v %v", ds, err)
	}
	if d := ds[0]; d.Runs != 2 || d.Epsilon > 1.5 || d.Epsilon < 1.4999 || d.Delta != 1e-3 || d.Unsettled != 0 || d.Name != p {
		t.Errorf("data set %+v; want 2 settled runs, ε = 1.5 at δ = 1e-3 named %s", d, p)
	}
}
