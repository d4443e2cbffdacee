package traincmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// cifarSampleDir is the CIFAR-10 sample of the shared data directory (issue 27: the first
// 1,017 records of each official batch), next to the repository.
const cifarSampleDir = "../../../../shared/data/cifar10-sample"

// smallCIFARSample writes the first records of each file of the CIFAR-10 sample into a
// temporary directory (partial files again, of records records each), or skips the test
// when the sample is absent.
func smallCIFARSample(t *testing.T, records int) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(cifarSampleDir, "data_batch_1.bin")); err != nil {
		t.Skipf("the CIFAR-10 sample is not at %s (%v): skipped", cifarSampleDir, err)
	}
	dir := t.TempDir()
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		b, err := os.ReadFile(filepath.Join(cifarSampleDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b[:records*3073], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Every CIFAR-10 model and recipe runs on real images of the sample (a smoke run: one
// epoch of 5 × 48 images, batch 48, so five steps), and the report says the files are
// partial.
func TestCIFAR10SampleModels(t *testing.T) {
	if testing.Short() {
		t.Skip("trains six CIFAR-10 models: skipped with -short")
	}
	data := smallCIFARSample(t, 48)
	common := []string{"-dataset", "cifar10", "-data", data, "-epochs", "1", "-batch", "48", "-seed", "1", "-epsilon", "8", "-json"}
	for _, run := range [][]string{
		{"-model", "cifar-cnn"},
		{"-model", "cifar-tb-cnn"},
		{"-model", "scatter-linear"},
		{"-model", "scatter-cnn"},
		{"-recipe", "cifar10-cnn"},
		{"-recipe", "cifar10-scatter"},
		{"-model", "scatter-linear", "-optimizer", "adp-sgd", "-lr", "1", "-adp-schedule", "sqrt-decay"},
	} {
		args := append(append([]string{}, run...), common...)
		code, stdout, stderr := runCmd(t, context.Background(), args...)
		if code != exit.OK {
			t.Errorf("train %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
			continue
		}
		if !strings.Contains(stderr, "data: data_batch_1.bin: 48 of 10,000 records (a partial file)") {
			t.Errorf("train %s: no note of the partial files:\n%s", strings.Join(args, " "), stderr)
		}
		s := decodeSummary(t, stdout)
		if s["steps"].(float64) != 5 || !(s["epsilon"].(float64) <= 8) {
			t.Errorf("train %s: %v steps, ε = %v; want 5 and ≤ 8", strings.Join(args, " "), s["steps"], s["epsilon"])
		}
	}
}
