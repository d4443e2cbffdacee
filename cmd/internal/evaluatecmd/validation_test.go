package evaluatecmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// apportion gives the examples per class that a stratified hold-out of fraction f of
// the examples counted by m takes: v = round(f·N) in all, class c ⌊v·m_c/N⌋ or one
// more, the ones more going to the classes with the largest remainders v·m_c mod N
// (ties to the smaller label). Found by brute force: of all the ways to round each
// class's share down or up that sum to v, the one where no class rounded down has a
// larger remainder (or an equal one and a smaller label) than a class rounded up.
func apportion(t *testing.T, m []int, f float64) []int {
	t.Helper()
	N := 0
	for _, k := range m {
		N += k
	}
	v := int(math.Round(f * float64(N)))
	var found []int
	for up := 0; up < 1<<len(m); up++ {
		a, sum := make([]int, len(m)), 0
		for c := range m {
			a[c] = v * m[c] / N
			if up>>c&1 == 1 {
				a[c]++
			}
			sum += a[c]
		}
		if sum != v {
			continue
		}
		ok := true
		for c := range m {
			for d := range m {
				rc, rd := v*m[c]%N, v*m[d]%N
				// c rounded up, d rounded down: c must come first.
				if up>>c&1 == 1 && up>>d&1 == 0 && (rd > rc || rd == rc && d < c) {
					ok = false
				}
			}
		}
		if ok {
			if found != nil {
				t.Fatalf("apportion %v, f = %v: two allocations %v and %v", m, f, found, a)
			}
			found = a
		}
	}
	if found == nil {
		t.Fatalf("apportion %v, f = %v: no allocation", m, f)
	}
	return found
}

// buildTrain builds cmd/train into a temporary directory.
func buildTrain(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/train")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	bin := filepath.Join(t.TempDir(), "train")
	if out, err := exec.Command(gobin, "build", "-o", bin, "github.com/privtrain/privtrain/cmd/train").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/train: %v\n%s", err, out)
	}
	return bin
}

// trainJSON runs the train binary with args and decodes its -json summary.
func trainJSON(t *testing.T, bin string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(bin, append(args, "-json")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("train %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var s map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("train %s: %v\n%s", strings.Join(args, " "), err, stdout.String())
	}
	return s
}

// classCounts counts the examples of each of k classes among idx of ds (all of ds when
// idx is nil).
func classCounts(ds datasets.Dataset, idx []int, k int) []int {
	counts := make([]int, k)
	labels := datasets.Labels(ds)
	if idx == nil {
		for _, l := range labels {
			counts[l]++
		}
		return counts
	}
	for _, i := range idx {
		counts[labels[i]]++
	}
	return counts
}

// TestEvaluateValidationSplit: a checkpoint of cmd/train -validation F gives back its
// split: evaluate -split validation scores the examples held out, class by class as
// many as the content-hash rule holds out (datasets.HashSplit, tested against its
// definition in datasets, run here on the data read directly), and -split train the
// rest of the training set, the two summing to the training set class by class; -split
// test is the test set. The
// validation metrics are those the run reported for its validation split. On csv:
// data the validation split comes out of the training part of the -test-fraction
// split; on MNIST out of the training set.
func TestEvaluateValidationSplit(t *testing.T) {
	bin := buildTrain(t)
	dir := t.TempDir()

	// csv: three classes of unequal size, in an order the loader sorts ("a" < "b" < "c").
	counts := []int{53, 31, 17}
	rng := rand.New(rand.NewPCG(8, 9))
	var b strings.Builder
	b.WriteString("x1,x2,kind\n")
	var rows []int
	for c, m := range counts {
		for range m {
			rows = append(rows, c)
		}
	}
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	for _, c := range rows {
		fmt.Fprintf(&b, "%.3f,%.3f,%c\n", 2+3*float64(c)+4*(rng.Float64()-0.5), 5+4*(rng.Float64()-0.5), 'a'+c)
	}
	csvPath := filepath.Join(dir, "t.csv")
	if err := os.WriteFile(csvPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ranges, _ := datasets.ParseRanges("0:12")
	table, err := datasets.LoadCSV(csvPath, datasets.CSVOptions{Label: "kind", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	if got := classCounts(table, nil, 3); !slices.Equal(got, counts) {
		t.Fatalf("csv: class counts %v, want %v", got, counts)
	}
	csvTrainIdx, csvTestIdx, err := datasets.HashSplit(table, 0.2, 6, datasets.DomainTest)
	if err != nil {
		t.Fatal(err)
	}
	testPart := classCounts(table, csvTestIdx, 3)
	csvTrain, _ := datasets.Subset(table, csvTrainIdx)

	// MNIST: 1,000 digits in a -data directory without the test files, which
	// -validation and -split train or validation do not read.
	embedded, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	digits, err := datasets.StratifiedSubset(embedded, 1000)
	if err != nil {
		t.Fatal(err)
	}
	idxDir := filepath.Join(dir, "idx")
	if err := os.Mkdir(idxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeIDX(t, idxDir, mnist.TrainImages, mnist.TrainLabels, digits)

	var mnistKept int
	for _, tc := range []struct {
		name      string
		train     []string
		eval      []string
		trainSet  datasets.Dataset // the training set that -validation splits
		fraction  float64
		seed      uint64
		testTotal int
	}{
		{"csv", []string{"-dataset", "csv:" + csvPath, "-label", "kind", "-scale", "0:12", "-test-fraction", "0.2", "-split-seed", "6", "-validation", "0.3", "-batch", "16"},
			nil, csvTrain, 0.3, 6, len(csvTestIdx)},
		{"mnist", []string{"-data", idxDir, "-validation", "0.15", "-split-seed", "11", "-batch", "100"}, []string{"-data", idxDir}, digits, 0.15, 11, 0},
	} {
		ckpt := filepath.Join(dir, tc.name+".ckpt")
		s := trainJSON(t, bin, append(tc.train, "-model", "logreg", "-optimizer", "sgd", "-lr", "0.5", "-epochs", "1", "-seed", "4", "-checkpoint", ckpt)...)
		k := tc.trainSet.NumClasses()
		counts := classCounts(tc.trainSet, nil, k)
		_, valIdx, err := datasets.HashSplit(tc.trainSet, tc.fraction, tc.seed, datasets.DomainValidation)
		if err != nil {
			t.Fatal(err)
		}
		val := classCounts(tc.trainSet, valIdx, k)
		N, V := tc.trainSet.Len(), len(valIdx)
		if tc.name == "mnist" {
			mnistKept = N - V
		}
		if s["eval_split"] != "validation" || s["train_examples"] != float64(N-V) || s["test_examples"] != float64(V) {
			t.Fatalf("%s: train's summary %v: want %d trained on, %d validation examples", tc.name, s, N-V, V)
		}
		tr := evaluateJSON(t, append([]string{"-checkpoint", ckpt, "-json", "-split", "train"}, tc.eval...)...)
		va := evaluateJSON(t, append([]string{"-checkpoint", ckpt, "-json", "-split", "validation"}, tc.eval...)...)
		if tr.Examples != N-V || va.Examples != V || tr.Examples+va.Examples != N {
			t.Errorf("%s: -split train %d, validation %d examples; want %d and %d (sum %d, the training set)",
				tc.name, tr.Examples, va.Examples, N-V, V, N)
		}
		for c := range val {
			if va.ClassExamples[c] != val[c] || tr.ClassExamples[c] != counts[c]-val[c] || tr.ClassExamples[c]+va.ClassExamples[c] != counts[c] {
				t.Errorf("%s, class %d (%d training examples): -split validation %d, train %d; want %d and %d",
					tc.name, c, counts[c], va.ClassExamples[c], tr.ClassExamples[c], val[c], counts[c]-val[c])
			}
		}
		if tc.name == "csv" {
			te := evaluateJSON(t, "-checkpoint", ckpt, "-json")
			if te.Examples != tc.testTotal || te.Split != "test" {
				t.Errorf("csv: -split test: %d examples, want %d", te.Examples, tc.testTotal)
			}
			for c := range testPart {
				if te.ClassExamples[c] != testPart[c] {
					t.Errorf("csv, class %d: -split test %d examples, want %d", c, te.ClassExamples[c], testPart[c])
				}
			}
		}
		if va.Split != "validation" || tr.Split != "train" {
			t.Errorf("%s: splits named %q and %q", tc.name, va.Split, tr.Split)
		}
		// The run's last evaluation was of this model on this split.
		if acc, loss := s["test_accuracy"].(float64), s["test_loss"].(float64); va.Accuracy != acc || math.Abs(va.Loss-loss) > 1e-5*loss {
			t.Errorf("%s: -split validation: accuracy %v, loss %v; train reported %v, %v on its validation split", tc.name, va.Accuracy, va.Loss, acc, loss)
		}
	}

	ckpt := filepath.Join(dir, "mnist.ckpt")
	// Resumed for a second epoch, the run trains on the same part and evaluates on the
	// same validation split: evaluate's split of the new checkpoint scores what the
	// resumed run reported.
	s := trainJSON(t, bin, "-resume", ckpt, "-checkpoint", ckpt, "-epochs", "2", "-data", idxDir)
	if s["steps"] == nil || s["train_examples"] != float64(mnistKept) {
		t.Errorf("resumed run: %v; want %d examples trained on", s, mnistKept)
	}
	va := evaluateJSON(t, "-checkpoint", ckpt, "-json", "-split", "validation", "-data", idxDir)
	if acc, loss := s["test_accuracy"].(float64), s["test_loss"].(float64); va.Accuracy != acc || math.Abs(va.Loss-loss) > 1e-5*loss || va.Examples != 1000-mnistKept {
		t.Errorf("after the resume: -split validation %d examples, accuracy %v, loss %v; the resumed run reported %v, %v", va.Examples, va.Accuracy, va.Loss, acc, loss)
	}
	// -split test needs the test files, which the directory lacks.
	code, _, stderr := runEvaluate("-checkpoint", ckpt, "-data", idxDir)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no "+mnist.TestImages) {
		t.Errorf("-split test without the test files: exit %d, %q", code, stderr)
	}
	// A -split-seed other than the run's does not give its split.
	code, _, stderr = runEvaluate("-checkpoint", ckpt, "-data", idxDir, "-split", "validation", "-split-seed", "12")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-split-seed 12: ") || !strings.Contains(stderr, "-validation 0.15 -split-seed 11") {
		t.Errorf("-split-seed 12 on a run with -split-seed 11: exit %d, %q", code, stderr)
	}
	// Data other than the run's (the embedded 8,000 digits): the rebuilt training part
	// is not the checkpoint's (about 850 examples).
	code, _, stderr = runEvaluate("-checkpoint", ckpt, "-split", "train")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "is not the one") || !strings.Contains(stderr, fmt.Sprintf("(%d examples", mnistKept)) {
		t.Errorf("-split train on other data: exit %d, %q", code, stderr)
	}
}

// TestEvaluateValidationRefused: -split validation of a checkpoint trained without
// -validation is a usage error naming the problem; so is an unknown -split.
func TestEvaluateValidationRefused(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 256)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	code, stdout, stderr := runEvaluate("-checkpoint", ckpt, "-split", "validation")
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-split validation: "+ckpt+" was trained without -validation") {
		t.Errorf("-split validation without -validation: exit %d, %q", code, stderr)
	}
	code, _, stderr = runEvaluate("-checkpoint", ckpt, "-split", "dev")
	if code != 2 || !strings.Contains(stderr, `-split "dev": want test, train or validation`) {
		t.Errorf("-split dev: exit %d, %q", code, stderr)
	}
	// Without -validation, -split train is the whole training set, as before.
	if r := evaluateJSON(t, "-checkpoint", ckpt, "-json", "-split", "train"); r.Examples != 8000 || r.Split != "train" {
		t.Errorf("-split train without -validation: %d examples (split %q); want the 8,000 of the embedded training set", r.Examples, r.Split)
	}
}

// TestEvaluateValidationSettings: the split comes from the checkpoint's settings as
// cmd/train records them (validation, split-seed, validation-split), here on checkpoints
// made with training.Trainer (no cmd/train build: this runs under -short too). An
// old-style checkpoint (no validation-split: trained on the part of the embedded MNIST
// training set that the stratified datasets.HoldOut keeps) is split by that rule, the
// counts per class the brute-force apportionment, with one warning that its ε is per
// part trained on; a new one (validation-split content-hash, trained on what
// datasets.HashHoldOut keeps) by the content hash, without the warning. Settings that
// do not parse, or an unknown rule, are a damaged checkpoint (exit 1) naming the setting.
func TestEvaluateValidationSettings(t *testing.T) {
	all, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	rest, _, err := datasets.HoldOut(all, 0.2, 3)
	if err != nil {
		t.Fatal(err)
	}
	const warning = "its -validation split is the stratified one of earlier versions, made again as it was: its ε is per the part it trained on, not per the training set that was split"
	save := func(settings map[string]string) string {
		m, err := nn.New(models.LogisticRegression(), 256, nn.WithSeed(1))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := training.NewTrainer(m, training.TrainerConfig{
			Data:     training.Data{Train: rest, Name: "mnist-embedded"},
			Settings: settings,
			Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
			Schedule: training.Schedule{BatchSize: 256, Epochs: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		// The untrained model: only the split matters here.
		return clitest.Save(t, tr, filepath.Join(t.TempDir(), "v.ckpt"))
	}
	ckpt := save(map[string]string{"dataset": "mnist", "validation": "0.2", "split-seed": "3"})
	counts := make([]int, 10)
	for _, l := range datasets.Labels(all) {
		counts[l]++
	}
	val := apportion(t, counts, 0.2)
	tr := evaluateJSON(t, "-checkpoint", ckpt, "-json", "-split", "train")
	va := evaluateJSON(t, "-checkpoint", ckpt, "-json", "-split", "validation")
	if tr.Examples != 6400 || va.Examples != 1600 {
		t.Errorf("-split train %d, validation %d examples; want 6,400 and 1,600 of 8,000", tr.Examples, va.Examples)
	}
	for c := range counts {
		if va.ClassExamples[c] != val[c] || tr.ClassExamples[c] != counts[c]-val[c] {
			t.Errorf("class %d (%d examples): validation %d, train %d; want %d and %d", c, counts[c], va.ClassExamples[c], tr.ClassExamples[c], val[c], counts[c]-val[c])
		}
	}
	code, _, stderr := runEvaluate("-checkpoint", ckpt, "-split", "train")
	if code != 0 || !strings.Contains(stderr, "the training split is the 6,400 examples the run trained on; the 1,600 that -validation 0.2 held out are left out") ||
		strings.Count(stderr, "evaluate: warning: "+ckpt+": "+warning) != 1 {
		t.Errorf("-split train of an old-style checkpoint: exit %d, notes %q; want the note and one warning", code, stderr)
	}
	code, _, stderr = runEvaluate("-checkpoint", ckpt, "-split", "validation")
	if code != 0 || strings.Count(stderr, warning) != 1 {
		t.Errorf("-split validation of an old-style checkpoint: exit %d, %q; want one warning", code, stderr)
	}
	// -split test does not use the validation split: no warning.
	if code, _, stderr = runEvaluate("-checkpoint", ckpt); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("-split test of an old-style checkpoint: exit %d, %q", code, stderr)
	}

	// A new checkpoint: the content-hash split, no warning.
	hashRest, _, err := datasets.HashHoldOut(all, 0.2, 3, datasets.DomainValidation)
	if err != nil {
		t.Fatal(err)
	}
	rest = hashRest // what save trains on
	fresh := save(map[string]string{"dataset": "mnist", "validation": "0.2", "split-seed": "3", "validation-split": "content-hash"})
	_, heldIdx, _ := datasets.HashSplit(all, 0.2, 3, datasets.DomainValidation)
	heldCounts := make([]int, 10)
	for _, i := range heldIdx {
		heldCounts[all.Label(i)]++
	}
	code, stdout, stderr := runEvaluate("-checkpoint", fresh, "-split", "validation", "-json")
	var va2 report
	if code != 0 || json.Unmarshal([]byte(stdout), &va2) != nil || strings.Contains(stderr, "warning") {
		t.Fatalf("-split validation of a new checkpoint: exit %d, %q", code, stderr)
	}
	if va2.Examples != len(heldIdx) || !slices.Equal(va2.ClassExamples, heldCounts) {
		t.Errorf("-split validation of a new checkpoint: %d examples %v; want %d %v", va2.Examples, va2.ClassExamples, len(heldIdx), heldCounts)
	}
	// The old rule's training part is not the new checkpoint's: without the setting, the
	// content fingerprint refuses it.
	code, _, stderr = runEvaluate("-checkpoint", save(map[string]string{"dataset": "mnist", "validation": "0.2", "split-seed": "3"}), "-split", "train")
	if code != 2 || !strings.Contains(stderr, "is not the one") {
		t.Errorf("a checkpoint trained on the content-hash part without its setting: exit %d, %q; want exit 2, not the training part", code, stderr)
	}
	// Another data set than the run's has no validation split; its -split train is
	// its whole training set.
	code, _, stderr = runEvaluate("-checkpoint", ckpt, "-split", "validation", "-dataset", "fashion-mnist", "-data", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "is part of the data set it was trained on, mnist, not of -dataset fashion-mnist") {
		t.Errorf("-split validation of other data: exit %d, %q", code, stderr)
	}
	for _, bad := range []map[string]string{
		{"dataset": "mnist", "validation": "abc", "split-seed": "3"},
		{"dataset": "mnist", "validation": "1.5", "split-seed": "3"},
		{"dataset": "mnist", "validation": "0.2"},
		{"dataset": "mnist", "validation": "0.2", "split-seed": "3", "validation-split": "stratified"},
	} {
		ckpt := save(bad)
		code, _, stderr := runEvaluate("-checkpoint", ckpt, "-split", "validation")
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "setting validation") {
			t.Errorf("settings %v: exit %d, %q; want exit 1 naming the setting", bad, code, stderr)
		}
	}
}
