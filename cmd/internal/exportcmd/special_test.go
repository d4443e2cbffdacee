package exportcmd

import (
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
	"github.com/privtrain/privtrain/models"
)

// TestExportReplacesOnlyRegularFiles (issue 40, item 3): a FIFO, a device node or a
// symbolic link given as -o or -pytorch is refused (exit 2, naming it) before the
// checkpoint is read and left as it was; a FIFO or a device given as -checkpoint is
// refused at once. Before, export -o FIFO replaced the FIFO with the safetensors file
// and exited 0, and -checkpoint of a device read it up to 4 GiB.
func TestExportReplacesOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 64)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	for _, flag := range []string{"-o", "-pytorch"} {
		specials := safeiotest.Specials(t, dir, strings.TrimPrefix(flag, "-")+".*.py")
		for _, sp := range specials.List {
			args := []string{"-checkpoint", ckpt, flag, sp.Path}
			if flag == "-pytorch" {
				args = append(args, "-o", dir+"/params.safetensors")
			}
			code, _, stderr := runExport(args...)
			if code != exit.Usage || !strings.Contains(stderr, sp.Path) || !strings.Contains(stderr, sp.Kind) {
				t.Errorf("%s %s (a %s): exit %d\n%s", flag, sp.Path, sp.Name, code, stderr)
			}
		}
		specials.Unchanged(t)
	}
	specials := safeiotest.Specials(t, dir, "in.*.ckpt")
	for _, sp := range specials.List {
		if sp.Name == "symlink" {
			continue
		}
		code, _, stderr := runExport("-checkpoint", sp.Path, "-o", dir+"/m.safetensors")
		if code != exit.Usage || !strings.Contains(stderr, sp.Path) || !strings.Contains(stderr, sp.Kind) {
			t.Errorf("-checkpoint %s (a %s): exit %d\n%s", sp.Path, sp.Name, code, stderr)
		}
	}
}
