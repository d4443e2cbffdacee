package evaluatecmd

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

func flat() nn.Spec {
	return nn.Spec{Name: "flat", Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 1}}}
}

func evaluateJSON(t *testing.T, args ...string) report {
	t.Helper()
	code, stdout, stderr := runEvaluate(args...)
	if code != 0 {
		t.Fatalf("evaluate %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	var r report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEvaluateOwnData: a checkpoint of a run on csv:PATH or images:DIR alone gives the
// accuracy and loss that the trainer measured on its held-out test split (training.Trainer's
// Evaluate on the split cli.LoadData made when training): the same examples, scaled and
// resized the same way. The settings matter: another -split-seed gives other numbers.
func TestEvaluateOwnData(t *testing.T) {
	dir := t.TempDir()
	csvPath := clitest.TableCSV(t, dir, 150)
	csvFlags := cli.DataFlags{Label: "kind", Header: "auto", Scale: "0:10,0:10,-2:12", TestFraction: 0.3, SplitSeed: 7, Labels: "fine"}
	imgDir := clitest.ImageFolder(t, dir, 20)
	imgFlags := cli.DataFlags{ImageSize: "6x5", Channels: 3, TestFraction: 0.25, SplitSeed: 3, Labels: "fine"}
	for _, tc := range []struct {
		dataset  string
		own      cli.DataFlags
		examples int
	}{
		{"csv:" + csvPath, csvFlags, 45},
		{"images:" + imgDir, imgFlags, 10},
	} {
		sub := filepath.Join(dir, strings.Split(tc.dataset, ":")[0])
		os.Mkdir(sub, 0o755)
		ckpt, loss, acc := clitest.OwnData(t, sub, flat(), tc.dataset, "", tc.own)
		if acc == 1 || acc < 0.4 {
			t.Fatalf("%s: the trainer's test accuracy %v: want a model that is neither perfect nor useless (a test that can fail)", tc.dataset, acc)
		}
		r := evaluateJSON(t, "-checkpoint", ckpt, "-json")
		if r.Examples != tc.examples || r.Dataset != tc.dataset || r.Split != "test" {
			t.Errorf("%s: report %+v", tc.dataset, r)
		}
		if math.Abs(r.Accuracy-acc) > 1e-12 || math.Abs(r.Loss-loss) > 1e-5*loss {
			t.Errorf("%s: evaluate: accuracy %v loss %v; the trainer's test evaluation: %v %v", tc.dataset, r.Accuracy, r.Loss, acc, loss)
		}
		other := evaluateJSON(t, "-checkpoint", ckpt, "-json", "-split-seed", "99")
		if other.Loss == r.Loss {
			t.Errorf("%s: -split-seed 99 gives the same loss %v: the split seed is not used", tc.dataset, r.Loss)
		}
	}

	// The data moved: the checkpoint's path is gone, -dataset names the new place and
	// the run's settings still apply.
	ckpt, loss, acc := clitest.OwnData(t, filepath.Join(dir, "csv"), flat(), "csv:"+csvPath, "", csvFlags)
	moved := filepath.Join(dir, "moved.csv")
	if err := os.Rename(csvPath, moved); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runEvaluate("-checkpoint", ckpt)
	if code != 2 || !strings.Contains(stderr, "no such file") || !strings.Contains(stderr, "-dataset csv:PATH") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("data moved: exit %d, %q", code, stderr)
	}
	r := evaluateJSON(t, "-checkpoint", ckpt, "-dataset", "csv:"+moved, "-json")
	if math.Abs(r.Accuracy-acc) > 1e-12 || math.Abs(r.Loss-loss) > 1e-5*loss {
		t.Errorf("moved: accuracy %v loss %v; the trainer's: %v %v", r.Accuracy, r.Loss, acc, loss)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scale", "0:1"}, "trained with -scale 0:10,0:10,-2:12"},
		{[]string{"-test-fraction", "1"}, "-test-fraction"},
		{[]string{"-label", "x1"}, `"a" is not a number`},
	} {
		code, _, stderr := runEvaluate(append([]string{"-checkpoint", ckpt, "-dataset", "csv:" + moved}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestEvaluateCIFAR100: a checkpoint of a cifar100 -labels coarse run is evaluated on
// the coarse labels (20 classes, from its settings) of the test file given by -data, with
// the trainer's own accuracy and loss; without -data it says what to pass.
func TestEvaluateCIFAR100(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cifar-100-binary")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"train.bin": 60, "test.bin": 20} {
		var b []byte
		for i := range n {
			fine := (i * 7) % 100
			r := make([]byte, 3074)
			r[0], r[1] = byte(fine%20), byte(fine)
			for j := 2; j < len(r); j++ {
				r[j] = byte(i*j + fine)
			}
			b = append(b, r...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sub := filepath.Join(t.TempDir(), "ckpt")
	os.Mkdir(sub, 0o755)
	ckpt, loss, acc := clitest.OwnData(t, sub, flat(), "cifar100", dir, cli.DataFlags{Labels: "coarse", TestFraction: 0.2, SplitSeed: 1})
	r := evaluateJSON(t, "-checkpoint", ckpt, "-data", dir, "-json")
	if r.Dataset != "cifar100-coarse" || r.Examples != 20 || len(r.ClassExamples) != 20 ||
		math.Abs(r.Accuracy-acc) > 1e-12 || math.Abs(r.Loss-loss) > 1e-5*loss {
		t.Errorf("report %+v; the trainer's accuracy %v loss %v", r, acc, loss)
	}
	code, _, stderr := runEvaluate("-checkpoint", ckpt)
	if code != 2 || !strings.Contains(stderr, "-dataset cifar100 needs -data PATH") {
		t.Errorf("no -data: exit %d, %q", code, stderr)
	}
}
