package ermcmd

import (
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestHelpSeedDefault: -help describes -seed's default once ("(default: crypto/rand)"),
// not also as "(default -1)"; a negative seed is refused instead of meaning crypto/rand.
func TestHelpSeedDefault(t *testing.T) {
	_, stdout, stderr := runCapture("-help")
	help := stdout + stderr
	i := strings.Index(help, "\n  -seed ")
	if i < 0 {
		t.Fatalf("-help does not list -seed:\n%s", help)
	}
	entry := help[i+1:]
	if j := strings.Index(entry[1:], "\n  -"); j >= 0 {
		entry = entry[:j+1]
	}
	if n := strings.Count(entry, "default"); n != 1 || !strings.Contains(entry, "crypto/rand") {
		t.Errorf("-seed entry %q: want one default, crypto/rand", entry)
	}
	if code, _, stderr := runCapture("-synthetic", "-seed", "-3"); code != exit.Usage || !strings.Contains(stderr, "-seed") {
		t.Errorf("-seed -3: exit %d, %q", code, stderr)
	}
}
