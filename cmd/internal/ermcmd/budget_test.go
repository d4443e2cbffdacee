package ermcmd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/erm/data"
	"gonum.org/v1/gonum/mat"
)

// TestMain keeps every test off the user's budget store.
func TestMain(m *testing.M) { os.Exit(clitest.RunWithTempBudgetStore(m)) }

// The fingerprint is the documented layout, built here byte by byte for a 2×1 data set.
func TestDataFingerprint(t *testing.T) {
	ds := &data.Dataset{X: mat.NewDense(2, 1, []float64{0.5, -2}), Y: []float64{1, -1}}
	var b []byte
	b = append(b, "privtrain-erm-data-v1\x00"...)
	b = append(b, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
	b = append(b, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f) // 0.5
	b = append(b, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f) // 1
	b = append(b, 0, 0, 0, 0, 0, 0, 0x00, 0xc0) // −2
	b = append(b, 0, 0, 0, 0, 0, 0, 0xf0, 0xbf) // −1
	h := sha256.Sum256(b)
	if got := dataFingerprint(ds); got != hex.EncodeToString(h[:]) {
		t.Errorf("fingerprint %s, want %x", got, h)
	}
	ds.Y[1] = 1
	if dataFingerprint(ds) == hex.EncodeToString(h[:]) {
		t.Error("a changed label keeps the fingerprint")
	}
}

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
