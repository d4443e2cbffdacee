package auditcmd

import (
	"runtime"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/audit"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestCanariesBounded (issue 23 item 9): "audit -canaries 1e9" grew without bound (4.9 GB
// in 15 s). Above audit.MaxCanaries it is a usage error that names the flag and the
// maximum, refused before anything of size m is allocated.
func TestCanariesBounded(t *testing.T) {
	for _, m := range []string{"1000000000", "100001"} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		code, out, stderr := runArgs("-canaries", m)
		runtime.ReadMemStats(&after)
		if code != exit.Usage || out != "" || !strings.Contains(stderr, "-canaries "+m) || !strings.Contains(stderr, "at most 100000") {
			t.Errorf("-canaries %s: exit %d, stdout %q, stderr %q; want exit 2 naming the flag and the maximum", m, code, out, stderr)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("-canaries %s: allocated %d MB before refusing", m, alloc>>20)
		}
	}
	if audit.MaxCanaries != 100000 {
		t.Errorf("MaxCanaries %d: the message above and -help say 100000", audit.MaxCanaries)
	}
}
