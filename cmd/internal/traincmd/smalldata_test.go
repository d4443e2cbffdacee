package traincmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// A CSV file of 400 examples (n ≈ 320 for training after the 20 % test split; n is
// what the content-hash split keeps, computed here) trains with the defaults: the
// default batch of 2048 exceeds the training set, so it becomes a quarter of it, ⌊n/4⌋,
// with a note; q = ⌊n/4⌋/n. A -batch given that exceeds the training set is refused,
// naming the flag and a value that fits. The checkpoint records the label column's
// values as the class names.
func TestSmallCSVDefaults(t *testing.T) {
	p := writeBlobsCSV(t, 400)
	n, _ := blobsSplitSizes(t, p, 0.2, 1)
	quarter := n / 4
	ck := filepath.Join(t.TempDir(), "small.ckpt")
	args := []string{"-dataset", "csv:" + p, "-label", "species", "-scale", "0:10", "-epochs", "2", "-json", "-checkpoint", ck}
	code, stdout, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("train %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	s := decodeSummary(t, stdout)
	if s["batch"].(float64) != float64(quarter) || s["train_examples"].(float64) != float64(n) || s["sample_rate"].(float64) != float64(quarter)/float64(n) {
		t.Errorf("batch %v of %v examples, q = %v; want %d of %d, q = %d/%d", s["batch"], s["train_examples"], s["sample_rate"], quarter, n, quarter, n)
	}
	if !strings.Contains(stderr, fmt.Sprintf("-batch %d instead of the default 2048: a quarter of the %d training examples (a default batch above n/2 becomes n/4)", quarter, n)) {
		t.Errorf("no note on the lowered batch:\n%s", stderr)
	}
	c, err := checkpoint.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ClassNames, []string{"left", "right"}) {
		t.Errorf("checkpoint class names %q, want the species column's [left right]", c.ClassNames)
	}
	// sgd's default batch (128) is at most n/2: kept.
	code, stdout, stderr = runCmd(t, context.Background(), "-dataset", "csv:"+p, "-label", "species", "-scale", "0:10", "-epochs", "1", "-optimizer", "sgd", "-json")
	if code != exit.OK || decodeSummary(t, stdout)["batch"].(float64) != 128 || 128 > n/2 {
		t.Errorf("sgd: exit %d, %s %s", code, stdout, stderr)
	}
	// Given: refused with the flag to change.
	code, _, stderr = runCmd(t, context.Background(), "-dataset", "csv:"+p, "-label", "species", "-scale", "0:10", "-batch", "2048")
	if code != exit.Usage || !strings.Contains(stderr, fmt.Sprintf("-batch 2048 is larger than the training set (%d examples): give -batch %d or less, e.g. -batch %d", n, n, quarter)) {
		t.Errorf("-batch 2048 on %d examples: exit %d, %q", n, code, stderr)
	}
	// A batch that fits is kept as given.
	code, stdout, stderr = runCmd(t, context.Background(), "-dataset", "csv:"+p, "-label", "species", "-scale", "0:10", "-batch", "200", "-epochs", "1", "-json")
	if code != exit.OK || decodeSummary(t, stdout)["batch"].(float64) != 200 || strings.Contains(stderr, "instead of the default") {
		t.Errorf("-batch 200 on %d examples: exit %d, %s", n, code, stderr)
	}
}

// Numeric labels that are not the class numbers 0 to K−1 are named in one warning on
// stderr, with the line of the first; the run goes on.
func TestLabelWarning(t *testing.T) {
	var b strings.Builder
	b.WriteString("f1,f2,y\n")
	for i := range 100 {
		fmt.Fprintf(&b, "%d,%d,%d\n", i%10, (i*7)%10, 1+i%2) // labels 1 and 2: class 0 has no example
	}
	p := filepath.Join(t.TempDir(), "from1.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, context.Background(), "-dataset", "csv:"+p, "-scale", "0:10", "-epochs", "1", "-optimizer", "sgd")
	if code != exit.OK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const want = "data: warning: integer labels are class numbers 0 to 2, but no example has label 0"
	if strings.Count(stderr, want) != 1 || !strings.Contains(stderr, "start at 1") {
		t.Errorf("want one warning %q in:\n%s", want, stderr)
	}
}

// -dataset images:FILE says that FILE is not a folder and what images:DIR wants, as a
// usage error (it was "open .: not a directory", exit 1).
func TestImagesFileNotFolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cat.png")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, context.Background(), "-dataset", "images:"+p)
	if code != exit.Usage || !strings.Contains(stderr, p+" is a file, not a folder; want a folder holding one subfolder of PNG or JPEG images per class") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	code, _, stderr = runCmd(t, context.Background(), "-dataset", "csv:"+filepath.Dir(p), "-scale", "0:1")
	if code != exit.Usage || !strings.Contains(stderr, "csv:PATH names a CSV file") {
		t.Errorf("csv:DIR: exit %d, %q", code, stderr)
	}
}

// -help: -model's default depends on the data, and says so instead of claiming cnn;
// -activation names every model with a hidden layer, mlp included.
func TestHelpModelAndActivation(t *testing.T) {
	code, stdout, _ := runCmd(t, context.Background(), "-help")
	if code != exit.OK {
		t.Fatalf("exit %d", code)
	}
	model := helpOf(stdout, "-model")
	if strings.Contains(model, `(default "cnn")`) || !strings.Contains(model, "Default: by the data") {
		t.Errorf("-model help: %s", model)
	}
	if act := helpOf(stdout, "-activation"); !strings.Contains(act, "mlp") {
		t.Errorf("-activation help: %s", act)
	}
}

// helpOf returns the lines of flag name's entry in -help's output.
func helpOf(help, name string) string {
	_, after, _ := strings.Cut(help, "\n  "+name+" ")
	entry, _, _ := strings.Cut(after, "\n  -")
	return entry
}
