package traincmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// writeCIFAR writes a CIFAR-10 directory in the official binary layout with n records
// per file (labels i mod 10, pixels a pattern of the record's index).
func writeCIFAR(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		var b []byte
		for i := range n {
			r := make([]byte, 3073)
			r[0] = byte(i % 10)
			for j := 1; j < len(r); j++ {
				r[j] = byte(i*j + len(name))
			}
			b = append(b, r...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestResidualModels: -model wrn-16-4 and resnet-klause train privately on CIFAR-10
// files, wide-cnn-28 and res-cnn-28 on Fashion-MNIST files, each under its name; the CIFAR ones refuse
// 28×28 images naming the size they take.
func TestResidualModels(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two 2.5M-parameter networks for a step each")
	}
	cifar := writeCIFAR(t, 4)
	for _, model := range []string{"wrn-16-4", "resnet-klause"} {
		s := decodeSummary(t, mustRun(t, "-model", model, "-dataset", "cifar10", "-data", cifar, "-batch", "20", "-epochs", "1", "-json"))
		if s["model"] != model || s["train_examples"].(float64) != 20 || s["steps"].(float64) != 1 {
			t.Errorf("-model %s on cifar10: %v", model, s)
		}
	}
	fashion := smallFashion(t, 60, 20)
	for _, model := range []string{"wide-cnn-28", "res-cnn-28"} {
		s := decodeSummary(t, mustRun(t, "-model", model, "-dataset", "fashion-mnist", "-data", fashion, "-batch", "20", "-epochs", "1", "-json"))
		if s["model"] != model || s["steps"].(float64) != 3 {
			t.Errorf("-model %s: %v", model, s)
		}
	}
	code, _, stderr := runCmd(t, context.Background(), "-model", "wrn-16-4", "-dataset", "fashion-mnist", "-data", fashion)
	if code != exit.Usage || !strings.Contains(stderr, "-model wrn-16-4 takes C×32×32 images") {
		t.Errorf("wrn-16-4 on 28×28 images: exit %d, %q", code, stderr)
	}
}
