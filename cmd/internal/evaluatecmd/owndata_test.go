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
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
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
// resized the same way, as many as the content-hash split holds out (datasets.HashSplit
// on the data read here), or, for a checkpoint written before the split's rule was
// recorded (LegacySplit: no test-split setting), the stratified split's round(f·n), with
// a one-line warning that its ε is per training part. The settings matter: another
// -split-seed gives other numbers.
func TestEvaluateOwnData(t *testing.T) {
	dir := t.TempDir()
	csvPath := clitest.TableCSV(t, dir, 150)
	csvFlags := cli.DataFlags{Label: "kind", Header: "auto", Scale: "0:10,0:10,-2:12", TestFraction: 0.3, SplitSeed: 7, Labels: "fine"}
	imgDir := clitest.ImageFolder(t, dir, 20)
	imgFlags := cli.DataFlags{ImageSize: "6x5", Channels: 3, TestFraction: 0.25, SplitSeed: 3, Labels: "fine"}
	ranges, err := datasets.ParseRanges(csvFlags.Scale)
	if err != nil {
		t.Fatal(err)
	}
	table, err := datasets.LoadCSV(csvPath, datasets.CSVOptions{Label: "kind", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	folder, err := datasets.LoadImageFolder(imgDir, datasets.ImageFolderOptions{Channels: 3, Width: 6, Height: 5})
	if err != nil {
		t.Fatal(err)
	}
	held := func(ds datasets.Dataset, own cli.DataFlags) int {
		_, picked, err := datasets.HashSplit(ds, own.TestFraction, own.SplitSeed, datasets.DomainTest)
		if err != nil {
			t.Fatal(err)
		}
		return len(picked)
	}
	legacy := func(own cli.DataFlags) cli.DataFlags { own.LegacySplit = true; return own }
	for _, tc := range []struct {
		name, dataset string
		own           cli.DataFlags
		examples      int
	}{
		{"csv", "csv:" + csvPath, csvFlags, held(table, csvFlags)},
		{"images", "images:" + imgDir, imgFlags, held(folder, imgFlags)},
		{"csv-legacy", "csv:" + csvPath, legacy(csvFlags), 45},      // round(0.3·150)
		{"images-legacy", "images:" + imgDir, legacy(imgFlags), 10}, // round(0.25·40)
	} {
		sub := filepath.Join(dir, tc.name)
		os.Mkdir(sub, 0o755)
		ckpt, loss, acc := clitest.OwnData(t, sub, flat(), tc.dataset, "", tc.own)
		if acc == 1 || acc < 0.4 {
			t.Fatalf("%s: the trainer's test accuracy %v: want a model that is neither perfect nor useless (a test that can fail)", tc.name, acc)
		}
		c, err := checkpoint.Load(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		if rule, ok := c.Settings["test-split"]; tc.own.LegacySplit == ok || ok && rule != "content-hash" {
			t.Errorf("%s: checkpoint settings %v: want test-split content-hash only for a new run", tc.name, c.Settings)
		}
		code, stdout, stderr := runEvaluate("-checkpoint", ckpt, "-json")
		var r report
		if code != 0 || json.Unmarshal([]byte(stdout), &r) != nil {
			t.Fatalf("%s: exit %d, %s", tc.name, code, stderr)
		}
		if r.Examples != tc.examples || r.Dataset != tc.dataset || r.Split != "test" {
			t.Errorf("%s: report %+v, want %d examples", tc.name, r, tc.examples)
		}
		if math.Abs(r.Accuracy-acc) > 1e-12 || math.Abs(r.Loss-loss) > 1e-5*loss {
			t.Errorf("%s: evaluate: accuracy %v loss %v; the trainer's test evaluation: %v %v", tc.name, r.Accuracy, r.Loss, acc, loss)
		}
		warned := strings.Contains(stderr, "evaluate: warning: "+ckpt+": its train/test split (-test-fraction) is the stratified one of earlier versions") &&
			strings.Contains(stderr, "not per the data set that was split")
		if warned != tc.own.LegacySplit || strings.Count(stderr, "warning") > 1 {
			t.Errorf("%s: stderr %q: want one warning on the stratified split for an old checkpoint, none for a new one", tc.name, stderr)
		}
		other := evaluateJSON(t, "-checkpoint", ckpt, "-json", "-split-seed", "99")
		if other.Loss == r.Loss {
			t.Errorf("%s: -split-seed 99 gives the same loss %v: the split seed is not used", tc.name, r.Loss)
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
