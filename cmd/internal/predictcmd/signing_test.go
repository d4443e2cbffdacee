package predictcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
)

// predict verifies the checkpoint's MAC when PRIVTRAIN_CHECKPOINT_KEY is set and
// refuses a signed checkpoint without the key unless -allow-unsigned (issue 22: it
// never checked MACs).
func TestPredictSigning(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 128)
	plain := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	input := filepath.Join(dir, "x.csv")
	if err := os.WriteFile(input, []byte(strings.Repeat("0,", 783)+"0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clitest.CheckSigning(t, plain, func(ckpt string) []string { return []string{"-checkpoint", ckpt, input} },
		func(args []string) (int, string) {
			var out, errb bytes.Buffer
			return run(args, &out, &errb), errb.String()
		})
}
