package exportcmd

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
)

// export verifies the checkpoint's MAC when PRIVTRAIN_CHECKPOINT_KEY is set and
// refuses a signed checkpoint without the key unless -allow-unsigned (issue 22: it
// never checked MACs).
func TestExportSigning(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 128)
	plain := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	out := filepath.Join(dir, "m.safetensors")
	clitest.CheckSigning(t, plain, func(ckpt string) []string { return []string{"-checkpoint", ckpt, "-o", out, "-q"} },
		func(args []string) (int, string) {
			var stdout, errb bytes.Buffer
			return run(args, &stdout, &errb), errb.String()
		})
}
