package exportcmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// TestExportClassNames: export -pytorch writes the checkpoint's class names (those that
// predict and evaluate print) into the module's CLASSES and the safetensors metadata's
// "privtrain.classes" (issue 41: the module had NUM_CLASSES only).
func TestExportClassNames(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 128)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	named := clitest.Rewrite(t, ckpt, filepath.Join(dir, "fashion.ckpt"), func(c *checkpoint.Training) {
		c.ClassNames = mnist.FashionClasses[:] // as a run on Fashion-MNIST records them
	})
	st, py := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "m.py")
	if code, _, stderr := runExport("-checkpoint", named, "-o", st, "-pytorch", py); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tensorfile.DecodeSafetensors(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := json.Unmarshal([]byte(f.Metadata["privtrain.classes"]), &got); err != nil || !slices.Equal(got, mnist.FashionClasses[:]) {
		t.Errorf("metadata privtrain.classes = %q; want %q", f.Metadata["privtrain.classes"], mnist.FashionClasses)
	}
	src, err := os.ReadFile(py)
	if err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(mnist.FashionClasses))
	for i, n := range mnist.FashionClasses {
		quoted[i] = strconv.Quote(n)
	}
	if want := "\nCLASSES = [" + strings.Join(quoted, ", ") + "]\n"; !strings.Contains(string(src), want) || !strings.Contains(string(src), "\nNUM_CLASSES = 10\n") {
		t.Errorf("module lacks %q beside NUM_CLASSES = 10", want)
	}
}
