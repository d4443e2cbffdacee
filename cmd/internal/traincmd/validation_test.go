package traincmd

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// exampleHashes hashes every example of ds (its values and its label).
func exampleHashes(t *testing.T, ds datasets.Dataset) map[[32]byte]int {
	t.Helper()
	out := map[[32]byte]int{}
	buf := make([]float32, datasets.Size(ds))
	raw := make([]byte, 4*len(buf)+8)
	for i := range ds.Len() {
		l := ds.Example(i, buf)
		for j, v := range buf {
			binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(v))
		}
		binary.LittleEndian.PutUint64(raw[4*len(buf):], uint64(l))
		out[sha256.Sum256(raw)]++
	}
	return out
}

// TestValidationSplit: -validation f on the embedded MNIST training set (8,000 digits)
// holds out v = round(f·8000) examples, class c giving v·m_c/8000 rounded down or up, the
// whole remainder v − Σ⌊v·m_c/8000⌋ going to the classes with the largest remainders
// (Hamilton's method, computed here from the class counts). The held-out and the kept
// examples partition the training set (as multisets of hashed examples); the same split
// seed gives the same split, another seed another one.
func TestValidationSplit(t *testing.T) {
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	N := train.Len()
	m := make([]int, 10)
	for _, l := range datasets.Labels(train) {
		m[l]++
	}
	trainHashes := exampleHashes(t, train)
	split := func(f float64, seed uint64) (rest, val datasets.Dataset) {
		o := &options{validation: f}
		o.own.SplitSeed = seed
		rest, val, err := splitValidation(o, train)
		if err != nil {
			t.Fatalf("-validation %v: %v", f, err)
		}
		return rest, val
	}
	for _, f := range []float64{0.1, 0.137, 0.5} {
		rest, val := split(f, 1)
		v := int(math.Round(f * float64(N)))
		// Hamilton's largest-remainder apportionment of v seats to the classes.
		want := make([]int, 10)
		type rem struct{ c, r int }
		var rems []rem
		left := v
		for c := range want {
			want[c] = v * m[c] / N
			left -= want[c]
			rems = append(rems, rem{c, v * m[c] % N})
		}
		slices.SortStableFunc(rems, func(a, b rem) int { return b.r - a.r })
		for _, r := range rems[:left] {
			want[r.c]++
		}
		if val.Len() != v || rest.Len() != N-v {
			t.Errorf("f = %v: %d validation, %d training examples; want %d and %d", f, val.Len(), rest.Len(), v, N-v)
		}
		got, gotRest := classCounts(val), classCounts(rest)
		for c := range want {
			share := float64(v*m[c]) / float64(N)
			if got[c] != want[c] || math.Abs(float64(got[c])-share) >= 1 || gotRest[c] != m[c]-want[c] {
				t.Errorf("f = %v, class %d (%d examples): %d held out, %d kept; want %d (share %.3f) and %d", f, c, m[c], got[c], gotRest[c], want[c], share, m[c]-want[c])
			}
		}
		// Every held-out example is a training example, and held out plus kept is
		// exactly the training set: no example in both, none lost.
		sum := exampleHashes(t, val)
		for h, k := range exampleHashes(t, rest) {
			sum[h] += k
		}
		if len(sum) != len(trainHashes) {
			t.Errorf("f = %v: %d distinct examples in the two parts, %d in the training set", f, len(sum), len(trainHashes))
		}
		for h, k := range trainHashes {
			if sum[h] != k {
				t.Fatalf("f = %v: an example occurs %d times in the training set and %d times in the two parts", f, k, sum[h])
			}
		}
	}
	_, a := split(0.1, 1)
	_, b := split(0.1, 1)
	_, c := split(0.1, 2)
	ha, hb, hc := exampleHashes(t, a), exampleHashes(t, b), exampleHashes(t, c)
	common := 0
	for h := range hc {
		if ha[h] > 0 {
			common++
		}
	}
	if !maps2Equal(ha, hb) {
		t.Error("split seed 1 twice: different validation sets")
	}
	// Two independent draws of 800 of 8,000 share about 80 examples; the same set would
	// share 800.
	if common > 200 {
		t.Errorf("split seeds 1 and 2: %d of 800 validation examples in common; want about 80", common)
	}
}

func maps2Equal(a, b map[[32]byte]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestValidationRun: a run with -validation trains on the kept 7,200 examples, so that its
// plan has q = b/7,200 and ε is the accountant's for that q (computed here in a fresh
// ledger); the noise calibrated for -epsilon is the accountant's calibration for that q.
// Its summary, metrics and checkpoint say "validation", and the accuracy it reports is
// that of its model on the held-out examples (rebuilt here from the training set).
func TestValidationRun(t *testing.T) {
	dir := t.TempDir()
	ckpt, metrics := filepath.Join(dir, "v.ckpt"), filepath.Join(dir, "m.jsonl")
	args := []string{"-model", "logreg", "-batch", "256", "-lr", "2", "-epochs", "2", "-noise", "1.3", "-seed", "3",
		"-validation", "0.1", "-split-seed", "5", "-checkpoint", ckpt, "-metrics", metrics, "-json"}
	s := decodeSummary(t, mustRun(t, args...))
	const n, b = 7200, 256
	q, steps := float64(b)/n, 2*((n+b-1)/b)
	if s["eval_split"] != "validation" || s["validation_fraction"] != 0.1 || s["validation_split_seed"] != 5.0 ||
		s["train_examples"] != float64(n) || s["test_examples"] != 800.0 {
		t.Errorf("summary %v: want eval_split validation, fraction 0.1, split seed 5, 7,200 train and 800 evaluated examples", s)
	}
	if s["sample_rate"] != q || s["steps"] != float64(steps) {
		t.Errorf("q = %v, %v steps; want 256/7200 = %v and 2·⌈7200/256⌉ = %d", s["sample_rate"], s["steps"], q, steps)
	}
	l := accountant.NewLedger()
	if err := l.Record(q, 1.3, steps); err != nil {
		t.Fatal(err)
	}
	want, _ := l.Epsilon(1e-5)
	if eps := s["epsilon"].(float64); math.Abs(eps-want.Epsilon) > 1e-12*want.Epsilon {
		t.Errorf("ε = %v; the accountant gives %v for q = 256/7200, z = 1.3, %d steps", eps, want.Epsilon, steps)
	}

	// The metrics lines name the split.
	f, err := os.Open(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r["eval_split"] != "validation" {
			t.Errorf("metrics line %s: want eval_split validation", sc.Text())
		}
		lines++
	}
	if lines != 2 {
		t.Errorf("%d metrics lines, want 2", lines)
	}

	// The reported accuracy is the model's on the held-out part of the training set.
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings["validation"] != "0.1" || c.Settings["split-seed"] != "5" {
		t.Errorf("checkpoint settings %v: want validation 0.1 and split-seed 5", c.Settings)
	}
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	_, val, err := datasets.HoldOut(train, 0.1, 5)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := nn.ModelFromCheckpoint(c, 64)
	if err != nil {
		t.Fatal(err)
	}
	p := nn.NewPredictor(mod)
	L, K := p.ExampleLen(), p.NumClasses()
	x := make([]float32, val.Len()*L)
	labels := make([]int, val.Len())
	for i := range labels {
		labels[i] = val.Example(i, x[i*L:(i+1)*L])
	}
	z := make([]float64, val.Len()*K)
	if err := p.Logits(x, z); err != nil {
		t.Fatal(err)
	}
	correct := 0
	for i, l := range labels {
		if nn.Argmax(z[i*K:(i+1)*K]) == l {
			correct++
		}
	}
	if acc := float64(correct) / float64(val.Len()); acc != s["test_accuracy"] {
		t.Errorf("the checkpoint's model has accuracy %v on the held-out examples; the run reported %v", acc, s["test_accuracy"])
	}

	// -epsilon calibrates the noise for the 7,200 examples trained on.
	s = decodeSummary(t, mustRun(t, "-model", "logreg", "-batch", "256", "-lr", "2", "-epochs", "2", "-epsilon", "2", "-validation", "0.1", "-json"))
	zWant, _, err := accountant.CalibrateNoise(q, steps, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if s["noise_multiplier"] != zWant {
		t.Errorf("calibrated z = %v; the accountant calibrates %v for q = 256/7200, %d steps, ε = 2", s["noise_multiplier"], zWant, steps)
	}

	// Without -validation the summary says test, and the text says test accuracy.
	s = decodeSummary(t, mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-epochs", "1", "-json"))
	if s["eval_split"] != "test" || s["test_examples"] != 2000.0 || s["validation_fraction"] != nil {
		t.Errorf("run without -validation: %v", s)
	}
	out := mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-epochs", "1", "-validation", "0.25")
	if !strings.Contains(out, "validation accuracy") || strings.Contains(out, "test accuracy") || !strings.Contains(out, "on 2,000 validation examples") {
		t.Errorf("text summary with -validation 0.25:\n%s", out)
	}
}

// TestValidationResume: a resumed run takes -validation and the split seed from the
// checkpoint (and so holds out the same examples: the result equals the uninterrupted
// run's); another fraction or split seed is refused.
func TestValidationResume(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt")
	common := []string{"-model", "logreg", "-seed", "7", "-noise", "1.1", "-batch", "500", "-validation", "0.2", "-split-seed", "4", "-json"}
	whole := decodeSummary(t, mustRun(t, append(common, "-epochs", "2", "-checkpoint", a)...))
	mustRun(t, append(common, "-epochs", "1", "-checkpoint", b)...)
	resumed := decodeSummary(t, mustRun(t, "-resume", b, "-epochs", "2", "-json"))
	for _, k := range []string{"epsilon", "steps", "test_accuracy", "test_loss", "eval_split", "validation_fraction", "validation_split_seed", "train_examples"} {
		if whole[k] != resumed[k] {
			t.Errorf("%s: uninterrupted %v, resumed %v", k, whole[k], resumed[k])
		}
	}
	for _, extra := range [][]string{{"-validation", "0.3"}, {"-split-seed", "5"}, {"-validation", "0"}} {
		code, _, stderr := runCmd(t, context.Background(), append([]string{"-resume", b, "-epochs", "2"}, extra...)...)
		if code != exit.Usage || !strings.Contains(stderr, "the run was trained with -validation 0.2 -split-seed 4, this command asks for") {
			t.Errorf("resume with %v: exit %d, %q; want exit 2 naming the setting", extra, code, stderr)
		}
	}
	// A run without -validation cannot be resumed with it.
	c := filepath.Join(dir, "c.ckpt")
	mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-epochs", "1", "-checkpoint", c)
	if code, _, stderr := runCmd(t, context.Background(), "-resume", c, "-epochs", "2", "-validation", "0.1"); code != exit.Usage || !strings.Contains(stderr, "trained with no -validation (evaluated on the test set), this command asks for -validation 0.1 -split-seed 1") {
		t.Errorf("resume of a run without -validation with -validation 0.1: exit %d, %q", code, stderr)
	}
}

// TestValidationBadFlags: fractions outside [0, 1), and fractions that leave a class
// without a training or a validation example, are usage errors naming -validation.
func TestValidationBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-validation", "-0.1"}, "-validation -0.1: want a fraction in [0, 1)"},
		{[]string{"-validation", "1"}, "-validation 1: want a fraction in [0, 1)"},
		{[]string{"-validation", "NaN"}, "-validation NaN: want a fraction in [0, 1)"},
		{[]string{"-validation", "Inf"}, "-validation +Inf: want a fraction in [0, 1)"},
		// round(0.0001·8000) = 1 example: nine classes give none.
		{[]string{"-validation", "0.0001"}, "for validation, and both must be ≥ 1"},
		// round(0.9998·8000) = 7998: only 2 examples left to train on.
		{[]string{"-validation", "0.9998"}, "for validation, and both must be ≥ 1"},
		{[]string{"-validation", "0.99999"}, "-validation 0.99999: fraction 0.99999 of 8000 examples leaves 8000"},
		{[]string{"-split-seed", "3"}, "-split-seed applies to -dataset csv:PATH or images:DIR, or with -validation"},
		{[]string{"-validation", "0.5", "-batch", "5000"}, "-batch 5000 is larger than the training set (4,000 examples)"},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), append([]string{"-model", "logreg", "-epochs", "1"}, tc.args...)...)
		if code != exit.Usage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("train %v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestValidationOwnData: on csv: data the validation split is carved from the training
// part of the -test-fraction split: 120 rows, 30 % test (36), then 25 % of the 84 left
// (21) for validation.
func TestValidationOwnData(t *testing.T) {
	path := writeBlobsCSV(t, 120)
	s := decodeSummary(t, mustRun(t, "-dataset", "csv:"+path, "-label", "species", "-scale", "0:10", "-test-fraction", "0.3", "-validation", "0.25",
		"-optimizer", "sgd", "-batch", "16", "-epochs", "1", "-json"))
	if s["eval_split"] != "validation" || s["train_examples"] != 63.0 || s["test_examples"] != 21.0 || s["validation_split_seed"] != 1.0 {
		t.Errorf("summary %v: want 63 trained, 21 validation examples, split seed 1", s)
	}
}

// TestValidationHelp: -help lists -validation and says that -split-seed seeds it.
func TestValidationHelp(t *testing.T) {
	_, stdout, _ := runCmd(t, context.Background(), "-help")
	if !strings.Contains(stdout, "\n  -validation FRACTION\n") || !strings.Contains(stdout, "any data set: the -validation split") {
		t.Errorf("-help does not describe -validation and its -split-seed:\n%s", stdout)
	}
}

// TestEMAHelpNamesSplits: -ema's help says that the periodic evaluations use the
// average on whichever split the run evaluates, the test set or the -validation split,
// not only "the test evaluations".
func TestEMAHelpNamesSplits(t *testing.T) {
	_, stdout, _ := runCmd(t, context.Background(), "-help")
	line := strings.Join(strings.Fields(helpLine(stdout, "ema")), " ")
	if line == "" || strings.Contains(line, "the test evaluations") || !strings.Contains(line, "the periodic evaluations (on the test set, or on the -validation split)") {
		t.Errorf("-help's -ema entry does not name both evaluated splits:\n%s", line)
	}
}

// TestValidationWithoutTestFiles: with -validation the test set is never evaluated, so
// a -data directory of MNIST or Fashion-MNIST IDX files without the test pair (t10k-*),
// or with a damaged test file, trains, and gives the same result as the complete
// directory (the same training set, the same held-out examples); so does a CIFAR-10 or
// CIFAR-100 directory without its test file. Without -validation the missing or damaged
// test file is an error naming it.
func TestValidationWithoutTestFiles(t *testing.T) {
	train, test, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := datasets.StratifiedSubset(train, 600)
	te, _ := datasets.StratifiedSubset(test, 200)
	whole, noTest, damaged := t.TempDir(), t.TempDir(), t.TempDir()
	for _, dir := range []string{whole, noTest, damaged} {
		writeIDX(t, dir, mnist.TrainImages, mnist.TrainLabels, tr)
	}
	writeIDX(t, whole, mnist.TestImages, mnist.TestLabels, te)
	writeIDX(t, damaged, mnist.TestImages, mnist.TestLabels, te)
	// A wrong magic number: not an IDX image file.
	if err := os.WriteFile(filepath.Join(damaged, mnist.TestImages), []byte{0, 0, 9, 9, 0, 0, 0, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ds := range []string{"mnist", "fashion-mnist"} {
		args := func(dir string) []string {
			return []string{"-dataset", ds, "-data", dir, "-model", "logreg", "-batch", "60", "-epochs", "1", "-seed", "2",
				"-noise", "1", "-validation", "0.25", "-split-seed", "3", "-json"}
		}
		ref := decodeSummary(t, mustRun(t, args(whole)...))
		if ref["train_examples"] != 450.0 || ref["test_examples"] != 150.0 || ref["eval_split"] != "validation" {
			t.Fatalf("-dataset %s -validation 0.25 on 600 training examples: %v; want 450 trained, 150 held out", ds, ref)
		}
		for _, dir := range []string{noTest, damaged} {
			s := decodeSummary(t, mustRun(t, args(dir)...))
			for _, k := range []string{"train_examples", "test_examples", "eval_split", "test_accuracy", "test_loss", "epsilon"} {
				if s[k] != ref[k] {
					t.Errorf("-dataset %s, test files %s: %s = %v; with the complete directory %v", ds, map[bool]string{true: "missing", false: "damaged"}[dir == noTest], k, s[k], ref[k])
				}
			}
		}
		code, _, stderr := runCmd(t, context.Background(), "-dataset", ds, "-data", noTest, "-model", "logreg", "-epochs", "1")
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no "+mnist.TestImages) {
			t.Errorf("-dataset %s without test files and without -validation: exit %d, %q; want exit 2 naming %s", ds, code, stderr, mnist.TestImages)
		}
		code, _, stderr = runCmd(t, context.Background(), "-dataset", ds, "-data", damaged, "-model", "logreg", "-epochs", "1")
		if code == exit.OK || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, mnist.TestImages) {
			t.Errorf("-dataset %s with a damaged test file and without -validation: exit %d, %q; want an error naming %s", ds, code, stderr, mnist.TestImages)
		}
	}
	// CIFAR-10 and CIFAR-100 directories without their test file.
	record := func(i, labelBytes int) []byte {
		r := make([]byte, labelBytes+3072)
		r[0], r[labelBytes-1] = byte(i%4), byte(i%4) // CIFAR-100: coarse label = fine label, classes 0-3
		for j := labelBytes; j < len(r); j++ {
			r[j] = byte(i * j)
		}
		return r
	}
	for _, tc := range []struct {
		dataset, testFile string
		train             []string
		labelBytes        int
	}{
		{"cifar10", "test_batch.bin", []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}, 1},
		{"cifar100", "test.bin", []string{"train.bin"}, 2},
	} {
		dir := t.TempDir()
		for _, name := range tc.train {
			var b []byte
			for i := range 40 / len(tc.train) {
				b = append(b, record(i, tc.labelBytes)...)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s := decodeSummary(t, mustRun(t, "-dataset", tc.dataset, "-data", dir, "-model", "logreg", "-batch", "10", "-epochs", "1", "-validation", "0.25", "-json"))
		if s["train_examples"] != 30.0 || s["test_examples"] != 10.0 || s["eval_split"] != "validation" {
			t.Errorf("-dataset %s without %s, -validation 0.25 of 40 examples: %v; want 30 trained, 10 held out", tc.dataset, tc.testFile, s)
		}
		code, _, stderr := runCmd(t, context.Background(), "-dataset", tc.dataset, "-data", dir, "-model", "logreg", "-batch", "10", "-epochs", "1")
		// (cifar100's missing file exits 1, cifar10's 2: as before this change.)
		if code == exit.OK || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.testFile) {
			t.Errorf("-dataset %s without %s and without -validation: exit %d, %q; want an error naming it", tc.dataset, tc.testFile, code, stderr)
		}
	}

	// Without the training files, -validation cannot help: the error names them.
	empty := t.TempDir()
	writeIDX(t, empty, mnist.TestImages, mnist.TestLabels, te)
	code, _, stderr := runCmd(t, context.Background(), "-data", empty, "-model", "logreg", "-epochs", "1", "-validation", "0.1")
	if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no "+mnist.TrainImages+" or "+mnist.TrainImages+".gz in "+empty) {
		t.Errorf("-validation without training files: exit %d, %q", code, stderr)
	}
}
