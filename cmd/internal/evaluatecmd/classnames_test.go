package evaluatecmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// The report names the classes: the CSV file's label values (the "kind" column: a, b, c)
// and the image folder's class folders (dark, light) in the JSON's class_names and in
// the text table's rows; a checkpoint without names (written before they were recorded)
// takes the names of the data it is evaluated on.
func TestEvaluateClassNames(t *testing.T) {
	dir := t.TempDir()
	csvPath := clitest.TableCSV(t, dir, 60)
	imgDir := clitest.ImageFolder(t, dir, 8)
	for _, tc := range []struct {
		dataset string
		own     cli.DataFlags
		names   []string
	}{
		{"csv:" + csvPath, cli.DataFlags{Label: "kind", Header: "auto", Scale: "0:10,0:10,-2:12", TestFraction: 0.3, SplitSeed: 7, Labels: "fine"}, []string{"a", "b", "c"}},
		{"images:" + imgDir, cli.DataFlags{ImageSize: "6x5", Channels: 3, TestFraction: 0.25, SplitSeed: 3, Labels: "fine"}, []string{"dark", "light"}},
	} {
		sub := filepath.Join(dir, strings.Split(tc.dataset, ":")[0])
		os.Mkdir(sub, 0o755)
		ckpt, _, _ := clitest.OwnData(t, sub, flat(), tc.dataset, "", tc.own)
		r := evaluateJSON(t, "-checkpoint", ckpt, "-json")
		if !slices.Equal(r.ClassNames, tc.names) || len(r.ConfusionMatrix) != len(tc.names) {
			t.Errorf("%s: class_names %q, want %q", tc.dataset, r.ClassNames, tc.names)
		}
		code, stdout, stderr := runEvaluate("-checkpoint", ckpt)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.dataset, code, stderr)
		}
		for k, name := range tc.names {
			if !strings.Contains(stdout, "\n"+string(rune('0'+k))+" "+name+" ") {
				t.Errorf("%s: no row for class %d %s in\n%s", tc.dataset, k, name, stdout)
			}
		}
		clitest.Rewrite(t, ckpt, ckpt, func(c *checkpoint.Training) { c.ClassNames = nil })
		if r := evaluateJSON(t, "-checkpoint", ckpt, "-json"); !slices.Equal(r.ClassNames, tc.names) {
			t.Errorf("%s without names in the checkpoint: class_names %q, want the data's %q", tc.dataset, r.ClassNames, tc.names)
		}
	}
}

// The built-in data sets' names: the digits of MNIST (rows "3", not "3 3").
func TestEvaluateDigitNames(t *testing.T) {
	train, _ := clitest.MNIST(t, 128)
	ckpt := clitest.Checkpoint(t, t.TempDir(), models.LogisticRegression(), train)
	r := evaluateJSON(t, "-checkpoint", ckpt, "-json")
	if want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}; !slices.Equal(r.ClassNames, want) {
		t.Errorf("class_names %q, want %q", r.ClassNames, want)
	}
	_, stdout, _ := runEvaluate("-checkpoint", ckpt)
	if !strings.Contains(stdout, "\n3      ") || strings.Contains(stdout, "\n3 3") {
		t.Errorf("rows of digits:\n%s", stdout)
	}
}

// A model evaluated on other data than it was trained on: the rows (true classes) carry
// the data's names, and a note says that the model's classes were named otherwise.
func TestEvaluateOtherDataNames(t *testing.T) {
	if _, err := os.Stat(filepath.Join(mnist.DebianFashionDir, "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Skip("Fashion-MNIST is not installed:", err)
	}
	train, _ := clitest.MNIST(t, 128)
	ckpt := clitest.Checkpoint(t, t.TempDir(), models.LogisticRegression(), train)
	code, stdout, stderr := runEvaluate("-checkpoint", ckpt, "-dataset", "fashion-mnist", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	garments := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	var r report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || !slices.Equal(r.ClassNames, garments) {
		t.Errorf("class_names %q (%v), want the garments", r.ClassNames, err)
	}
	if !strings.Contains(stderr, "note: the data evaluated names its classes T-shirt/top, Trouser, Pullover, Dress, … (10 in all), the model's training data 0, 1, 2, 3,") {
		t.Errorf("no note on the names: %q", stderr)
	}
}
