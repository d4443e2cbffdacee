package auditcmd

import (
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
)

// TestMain keeps every test off the user's budget store.
func TestMain(m *testing.M) { os.Exit(clitest.RunWithTempBudgetStore(m)) }

// A one-run audit records the subsampled Gaussian steps it ran on its real digits; the
// multi-run audit (blank filler and canaries only) records nothing.
func TestBudgetRecorded(t *testing.T) {
	store := t.TempDir()
	code, _, stderr := runArgs("-canaries", "50", "-real", "100", "-epochs", "2", "-noise", "2", "-budget-store", store, "-seed", "1", "-json")
	if code != exit.OK && code != exitFlagged {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s, _ := budget.Open(store, nil)
	ds, err := s.Datasets(0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("%+v %v", ds, err)
	}
	d, runs, err := s.Runs(ds[0].Fingerprint, 0)
	if err != nil || len(runs) != 1 || !runs[0].Settled || runs[0].Tool != "audit" {
		t.Fatalf("%+v %v", runs, err)
	}
	// The reservation bounds what ran: q and steps at least the run's.
	res, got := runs[0].Reserved.Segments[0], runs[0].Spend.Segments[0]
	if got.Z != 2 || res.Z != 2 || res.Q < got.Q || res.Steps < got.Steps || d.Steps != got.Steps {
		t.Errorf("reserved %+v, ran %+v, data set %d steps", res, got, d.Steps)
	}
	want, err := accountant.RDP{Orders: accountant.OrdersUpTo(256)}.Epsilon([]accountant.Segment{got}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if d.Epsilon > want.Epsilon+1e-9 || d.Epsilon < 0.8*want.Epsilon || math.IsNaN(d.Epsilon) {
		t.Errorf("ε = %v, want at most the RDP bound %v of the steps that ran", d.Epsilon, want.Epsilon)
	}
	code, _, stderr = runArgs("-mode", "multi-run", "-runs", "4", "-epochs", "1", "-dim", "4", "-budget-store", store, "-json")
	if code != exit.OK && code != exitFlagged {
		t.Fatalf("multi-run: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "budget:") {
		t.Errorf("multi-run recorded a spend: %s", stderr)
	}
	if ds, _ := s.Datasets(0); len(ds) != 1 {
		t.Errorf("multi-run added a data set: %+v", ds)
	}
}

// Issue 40, item 8: a one-run audit trains on a subset of the embedded MNIST training
// sample, and records its spend under the fingerprint of that whole sample (the data set
// train -dataset mnist records under), so that it composes with the train runs on it.
func TestBudgetAuditUnderWholeDataset(t *testing.T) {
	store := t.TempDir()
	code, _, stderr := runArgs("-canaries", "50", "-real", "100", "-epochs", "1", "-noise", "2", "-budget-store", store, "-seed", "1", "-json")
	if code != exit.OK && code != exitFlagged {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := budget.Open(store, nil)
	ds, err := s.Datasets(0)
	if err != nil || len(ds) != 1 || ds[0].Fingerprint != datasets.ContentFingerprint(train) {
		t.Errorf("audit recorded %+v (%v); want one data set, the whole embedded training sample %s", ds, err, datasets.ContentFingerprint(train))
	}
}
