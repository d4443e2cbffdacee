package traincmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// runNoHang is runCmd that fails t, instead of hanging the test, when train has not
// returned after a minute (it would be blocked on a FIFO).
func runNoHang(t *testing.T, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := runCmd(t, context.Background(), args...)
		done <- result{code, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stderr
	case <-time.After(time.Minute):
		t.Fatalf("train %s hangs", strings.Join(args, " "))
	}
	return 0, ""
}

// TestOutputsReplaceOnlyRegularFiles (issue 40, item 3): a FIFO, a device node or a
// symbolic link given as -checkpoint, -metrics or -plot is refused before any work (exit
// 2, one line naming it) and left as it was, and so is a link's target. Before,
// -checkpoint FIFO trained and replaced the FIFO with the checkpoint (size 0 counted as
// "nothing to lose"; as root, -checkpoint /dev/null replaced /dev/null), and -metrics
// FIFO hung. A FIFO given to -resume is refused at once, as is a lock file that is a
// symbolic link (issue 40, item 4: it truncated the link's target and wrote a pid into
// it).
func TestOutputsReplaceOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"-checkpoint", "-metrics", "-plot"} {
		specials := safeiotest.Specials(t, dir, strings.TrimPrefix(flag, "-")+".*.png")
		for _, sp := range specials.List {
			code, stderr := runNoHang(t, append(lockArgs, "-epochs", "1", flag, sp.Path)...)
			if code != exit.Usage || !strings.Contains(stderr, sp.Path) || !strings.Contains(stderr, sp.Kind) ||
				strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("%s %s (a %s): exit %d\n%s", flag, sp.Path, sp.Name, code, stderr)
			}
		}
		specials.Unchanged(t)
	}

	specials := safeiotest.Specials(t, dir, "resume.*")
	for _, sp := range specials.List {
		if sp.Name == "symlink" {
			continue // a link to a file is read as that file
		}
		code, stderr := runNoHang(t, append(lockArgs, "-epochs", "1", "-resume", sp.Path)...)
		if code != exit.Usage || !strings.Contains(stderr, sp.Path) || !strings.Contains(stderr, sp.Kind) {
			t.Errorf("-resume %s (a %s): exit %d\n%s", sp.Path, sp.Name, code, stderr)
		}
	}
	specials.Unchanged(t)

	ckpt := filepath.Join(dir, "m.ckpt")
	target := filepath.Join(dir, "precious.txt")
	os.WriteFile(target, []byte(safeiotest.TargetContent), 0o600)
	if err := os.Symlink(target, ckpt+".lock"); err != nil {
		t.Fatal(err)
	}
	code, stderr := runNoHang(t, append(lockArgs, "-epochs", "1", "-checkpoint", ckpt)...)
	if code != exit.Usage || !strings.Contains(stderr, ckpt+".lock") || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("-checkpoint %s with a symbolic link at %s.lock: exit %d\n%s", ckpt, ckpt, code, stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != safeiotest.TargetContent {
		t.Errorf("the lock link's target now holds %q", b)
	}
	if _, err := os.Stat(ckpt); err == nil {
		t.Errorf("train wrote %s without its lock", ckpt)
	}
}
