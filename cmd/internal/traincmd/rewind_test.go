package traincmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestResumeOlderCopy: resuming an older copy of a run whose newer checkpoint is at
// -checkpoint is refused (it used to resume silently and forget the newer steps); with
// -allow-rewind it resumes, warns, and the ledger keeps the discarded steps.
func TestResumeOlderCopy(t *testing.T) {
	dir := t.TempDir()
	c, old := filepath.Join(dir, "c.ckpt"), filepath.Join(dir, "old.ckpt")
	mustRun(t, "-model", "logreg", "-seed", "7", "-noise", "1.1", "-batch", "500", "-epochs", "1", "-checkpoint", c)
	copyFile(t, c, old) // step 16
	two := decodeSummary(t, mustRun(t, "-resume", c, "-epochs", "2", "-checkpoint", c, "-json"))
	newest, err := checkpoint.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	first, err := checkpoint.Load(old)
	if err != nil {
		t.Fatal(err)
	}
	if newest.Step != 32 || first.Step != 16 || newest.RunID != first.RunID || newest.RunID == "" {
		t.Fatalf("checkpoints at steps %d and %d of runs %q and %q", newest.Step, first.Step, newest.RunID, first.RunID)
	}

	code, _, stderr := runCmd(t, context.Background(), "-resume", old, "-epochs", "2", "-checkpoint", c)
	if code != exit.Usage || !strings.Contains(stderr, "-allow-rewind") || !strings.Contains(stderr, "older copy") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("resuming an older copy: exit %d, %q", code, stderr)
	}
	if again, err := checkpoint.Load(c); err != nil || again.Step != 32 {
		t.Fatalf("the refused resume touched %s: %v, %v", c, again, err)
	}

	code, stdout, stderr := runCmd(t, context.Background(), "-resume", old, "-epochs", "2", "-checkpoint", c, "-allow-rewind", "-json")
	if code != exit.OK || !strings.Contains(stderr, "warning") || !strings.Contains(stderr, "16 discarded steps") {
		t.Fatalf("-allow-rewind: exit %d, %q", code, stderr)
	}
	rewound := decodeSummary(t, stdout)
	if !(rewound["epsilon"].(float64) > two["epsilon"].(float64)) {
		t.Errorf("ε after the rewind %v, before %v: the discarded steps must stay counted", rewound["epsilon"], two["epsilon"])
	}
	after, err := checkpoint.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	if after.Step != 32 || after.LineageSteps() != 48 || after.Ledger.Steps() != 48 || !slices.Equal(after.Rewinds, []checkpoint.Rewind{{From: 32, To: 16}}) {
		t.Errorf("after the rewind: step %d, %d steps taken, ledger %d, rewinds %v", after.Step, after.LineageSteps(), after.Ledger.Steps(), after.Rewinds)
	}
	// Resuming the file itself (or a copy of the newest) needs no flag.
	mustRun(t, "-resume", c, "-checkpoint", c)

	code, _, stderr = runCmd(t, context.Background(), "-model", "logreg", "-epochs", "1", "-allow-rewind")
	if code != exit.Usage || !strings.Contains(stderr, "-allow-rewind") {
		t.Errorf("-allow-rewind without -resume: exit %d, %q", code, stderr)
	}
}

// TestCheckpointKey: with PRIVTRAIN_CHECKPOINT_KEY set, checkpoints carry a MAC and a
// resume refuses one that was written without the key (or with another).
func TestCheckpointKey(t *testing.T) {
	t.Setenv(budget.StoreEnv, t.TempDir()) // keyed entries: a store of its own, so the unkeyed tests can read theirs
	dir := t.TempDir()
	c, plain := filepath.Join(dir, "c.ckpt"), filepath.Join(dir, "plain.ckpt")
	args := []string{"-model", "logreg", "-seed", "7", "-noise", "1.1", "-batch", "1000", "-epochs", "1"}
	mustRun(t, append(args, "-checkpoint", plain)...)
	t.Setenv(keyEnv, "a key of at least sixteen bytes")
	mustRun(t, append(args, "-checkpoint", c)...)
	if _, err := checkpoint.LoadWithKey(c, []byte("a key of at least sixteen bytes")); err != nil {
		t.Fatalf("checkpoint written under the key: %v", err)
	}
	mustRun(t, "-resume", c, "-epochs", "2", "-checkpoint", c)
	code, _, stderr := runCmd(t, context.Background(), "-resume", plain, "-epochs", "2")
	if code != exit.Usage || !strings.Contains(stderr, "no MAC") {
		t.Errorf("resuming an unkeyed checkpoint with a key set: exit %d, %q", code, stderr)
	}
	t.Setenv(keyEnv, "short")
	code, _, stderr = runCmd(t, context.Background(), append(args, "-checkpoint", c)...)
	if code != exit.Usage || !strings.Contains(stderr, keyEnv) {
		t.Errorf("short key: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCmd(t, context.Background(), "-resume", c)
	if code != exit.Usage || !strings.Contains(stderr, keyEnv) {
		t.Errorf("short key with -resume: exit %d, %q", code, stderr)
	}
}
