package evaluatecmd

import (
	"bytes"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
)

// evaluate verifies the checkpoint's MAC when PRIVTRAIN_CHECKPOINT_KEY is set and
// refuses a signed checkpoint without the key unless -allow-unsigned (issue 22: it
// never checked MACs).
func TestEvaluateSigning(t *testing.T) {
	train, _ := clitest.MNIST(t, 128)
	plain := clitest.Checkpoint(t, t.TempDir(), models.LogisticRegression(), train)
	clitest.CheckSigning(t, plain, func(ckpt string) []string { return []string{"-checkpoint", ckpt, "-json"} },
		func(args []string) (int, string) {
			var out, errb bytes.Buffer
			return run(args, &out, &errb), errb.String()
		})
}
