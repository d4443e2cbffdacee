package traincmd

import (
	"os"
	"strings"
	"testing"
)

// TestLockFileDocumented: the lock file that train leaves beside a checkpoint is named
// in docs/checkpoints.md as lockPath names it, with what it is, that it is safe to
// delete when no run is going, and why it stays (issue 41: not a word in the docs).
func TestLockFileDocumented(t *testing.T) {
	b, err := os.ReadFile("../../../docs/checkpoints.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	_, section, ok := strings.Cut(doc, "### Files beside a checkpoint\n")
	section, _, _ = strings.Cut(section, "\n#")
	if !ok {
		t.Fatal("docs/checkpoints.md has no section \"Files beside a checkpoint\"")
	}
	section = strings.Join(strings.Fields(section), " ") // whatever the line breaks
	for _, want := range []string{"`" + lockPath("run.ckpt") + "`", "safe to delete when no `train` run is going", "deliberately not deleted"} {
		if !strings.Contains(section, want) {
			t.Errorf("the section does not say %q:\n%s", want, section)
		}
	}
}
