package traincmd

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
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

// TestValidationSplitLegacy: the stratified rule that a resumed checkpoint of earlier
// versions (without the validation-split setting) splits by: -validation f on the
// embedded MNIST training set (8,000 digits) holds out v = round(f·8000) examples, class c giving v·m_c/8000 rounded down or up, the
// whole remainder v − Σ⌊v·m_c/8000⌋ going to the classes with the largest remainders
// (Hamilton's method, computed here from the class counts). The held-out and the kept
// examples partition the training set (as multisets of hashed examples); the same split
// seed gives the same split, another seed another one.
func TestValidationSplitLegacy(t *testing.T) {
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
		o := &options{validation: f, legacyValidationSplit: true}
		o.own.SplitSeed = seed
		rest, val, _, err := splitValidation(o, train)
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

// TestValidationSplit: -validation f holds out each example of the training set by a
// hash of its content (datasets.HashSplit, tested against its definition in datasets),
// the split -tune makes too. On the embedded MNIST training set (8,000 digits): the
// number held out is Bin(8000, f), within 5 standard deviations of f·8000, and so is
// each class's; held out and kept partition the training set; and removing any of
// several examples (a neighbouring data set) changes no other example's side (the
// stratified rule of earlier versions changes about 700 of 800, checked here too).
func TestValidationSplit(t *testing.T) {
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	N := train.Len()
	m := classCounts(train)
	split := func(ds datasets.Dataset, f float64, seed uint64, legacy bool) (rest, val datasets.Dataset) {
		o := &options{validation: f, legacyValidationSplit: legacy}
		o.own.SplitSeed = seed
		rest, val, _, err := splitValidation(o, ds)
		if err != nil {
			t.Fatalf("-validation %v: %v", f, err)
		}
		return rest, val
	}
	within := func(got, n int, f float64) bool {
		return math.Abs(float64(got)-float64(n)*f) <= 5*math.Sqrt(float64(n)*f*(1-f))
	}
	trainHashes := exampleHashes(t, train)
	for _, f := range []float64{0.1, 0.137, 0.5} {
		rest, val := split(train, f, 1, false)
		if !within(val.Len(), N, f) || rest.Len()+val.Len() != N {
			t.Errorf("f = %v: %d validation and %d training examples of %d", f, val.Len(), rest.Len(), N)
		}
		for c, got := range classCounts(val) {
			if !within(got, m[c], f) {
				t.Errorf("f = %v: class %d gives %d of its %d examples", f, c, got, m[c])
			}
		}
		sum := exampleHashes(t, val)
		for h, k := range exampleHashes(t, rest) {
			sum[h] += k
		}
		if !maps2Equal(sum, trainHashes) {
			t.Errorf("f = %v: the two parts are not the training set", f)
		}
		// -tune's split is the same one.
		_, tv, err := tuneSplit(train, f, 1)
		if err != nil || !maps2Equal(exampleHashes(t, tv), exampleHashes(t, val)) {
			t.Errorf("f = %v: -tune's validation part differs from -validation's (err %v)", f, err)
		}
	}
	// Neighbours: drop one example; count the held-out examples of the whole set that
	// are no longer held out, other than the dropped one.
	_, val := split(train, 0.1, 1, false)
	_, legacyVal := split(train, 0.1, 1, true)
	for _, drop := range []int{0, 1, 1234, 4000, N - 1} {
		idx := make([]int, 0, N-1)
		for i := range N {
			if i != drop {
				idx = append(idx, i)
			}
		}
		d, err := datasets.Subset(train, idx)
		if err != nil {
			t.Fatal(err)
		}
		dropped, _ := datasets.Subset(train, []int{drop})
		gone := exampleHashes(t, dropped)
		moved := func(before, after datasets.Dataset) int {
			a, n := exampleHashes(t, after), 0
			for h, k := range exampleHashes(t, before) {
				if gone[h] > 0 {
					continue
				}
				n += max(k-a[h], 0)
			}
			return n
		}
		_, val2 := split(d, 0.1, 1, false)
		if n := moved(val, val2); n != 0 {
			t.Errorf("without example %d: %d other examples leave the validation part", drop, n)
		}
		_, legacy2 := split(d, 0.1, 1, true)
		if n := moved(legacyVal, legacy2); n < 100 {
			t.Errorf("without example %d: the stratified rule moves %d held-out examples; want hundreds (the reason for the content hash)", drop, n)
		}
	}
	_, a := split(train, 0.1, 1, false)
	_, c := split(train, 0.1, 2, false)
	ha, hc := exampleHashes(t, a), exampleHashes(t, c)
	common := 0
	for h := range hc {
		if ha[h] > 0 {
			common++
		}
	}
	// Two independent 10 % splits of 8,000 share Bin(8000, 0.01) ≈ 80 ± 9 examples.
	if common > 200 {
		t.Errorf("split seeds 1 and 2: %d validation examples in common; want about 80", common)
	}
}

// hashSplitSizes returns how many examples of ds the content-hash split of fraction
// and seed in domain keeps and holds out (datasets.HashSplit, tested against its
// definition in package datasets): the sizes a run's parts must have.
func hashSplitSizes(t *testing.T, ds datasets.Dataset, fraction float64, seed uint64, domain string) (kept, held int) {
	t.Helper()
	rest, picked, err := datasets.HashSplit(ds, fraction, seed, domain)
	if err != nil {
		t.Fatal(err)
	}
	return len(rest), len(picked)
}

// blobsSplitSizes is hashSplitSizes for the train/test split of writeBlobsCSV's file
// read with -label species -scale 0:10.
func blobsSplitSizes(t *testing.T, path string, fraction float64, seed uint64) (kept, held int) {
	t.Helper()
	ranges, err := datasets.ParseRanges("0:10")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := datasets.LoadCSV(path, datasets.CSVOptions{Label: "species", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	return hashSplitSizes(t, tab, fraction, seed, datasets.DomainTest)
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

// TestValidationRun: a run with -validation 0.1 trains on the n examples the
// content-hash split keeps (about 7,200 of 8,000), so that its plan has q = b/n and ε is
// the accountant's for that q (computed here in a fresh ledger); the noise calibrated
// for -epsilon is the accountant's calibration for that q.
// Its summary, metrics and checkpoint say "validation", and the accuracy it reports is
// that of its model on the held-out examples (rebuilt here from the training set).
func TestValidationRun(t *testing.T) {
	dir := t.TempDir()
	ckpt, metrics := filepath.Join(dir, "v.ckpt"), filepath.Join(dir, "m.jsonl")
	args := []string{"-model", "logreg", "-batch", "256", "-lr", "2", "-epochs", "2", "-noise", "1.3", "-seed", "3",
		"-validation", "0.1", "-split-seed", "5", "-checkpoint", ckpt, "-metrics", metrics, "-json"}
	s := decodeSummary(t, mustRun(t, args...))
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	n, held := hashSplitSizes(t, train, 0.1, 5, datasets.DomainValidation)
	const b = 256
	q, steps := float64(b)/float64(n), 2*((n+b-1)/b)
	if s["eval_split"] != "validation" || s["validation_fraction"] != 0.1 || s["validation_split_seed"] != 5.0 ||
		s["train_examples"] != float64(n) || s["test_examples"] != float64(held) {
		t.Errorf("summary %v: want eval_split validation, fraction 0.1, split seed 5, %d train and %d evaluated examples", s, n, held)
	}
	if s["sample_rate"] != q || s["steps"] != float64(steps) {
		t.Errorf("q = %v, %v steps; want 256/%d = %v and 2·⌈%d/256⌉ = %d", s["sample_rate"], s["steps"], n, q, n, steps)
	}
	l := accountant.NewLedger()
	if err := l.Record(q, 1.3, steps); err != nil {
		t.Fatal(err)
	}
	want, _ := l.Epsilon(1e-5)
	if eps := s["epsilon"].(float64); math.Abs(eps-want.Epsilon) > 1e-12*want.Epsilon {
		t.Errorf("ε = %v; the accountant gives %v for q = 256/%d, z = 1.3, %d steps", eps, want.Epsilon, n, steps)
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
	if c.Settings["validation"] != "0.1" || c.Settings["split-seed"] != "5" || c.Settings["validation-split"] != "content-hash" {
		t.Errorf("checkpoint settings %v: want validation 0.1, split-seed 5 and validation-split content-hash", c.Settings)
	}
	_, val, err := datasets.HashHoldOut(train, 0.1, 5, datasets.DomainValidation)
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

	// -epsilon calibrates the noise for the n examples trained on (split seed 1: another n).
	s = decodeSummary(t, mustRun(t, "-model", "logreg", "-batch", "256", "-lr", "2", "-epochs", "2", "-epsilon", "2", "-validation", "0.1", "-json"))
	n1, _ := hashSplitSizes(t, train, 0.1, 1, datasets.DomainValidation)
	q1, steps1 := float64(b)/float64(n1), 2*((n1+b-1)/b)
	zWant, _, err := accountant.CalibrateNoise(q1, steps1, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if s["noise_multiplier"] != zWant || s["train_examples"] != float64(n1) {
		t.Errorf("calibrated z = %v for %v examples; the accountant calibrates %v for q = 256/%d, %d steps, ε = 2", s["noise_multiplier"], s["train_examples"], zWant, n1, steps1)
	}

	// Without -validation the summary says test, and the text says test accuracy.
	s = decodeSummary(t, mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-epochs", "1", "-json"))
	if s["eval_split"] != "test" || s["test_examples"] != 2000.0 || s["validation_fraction"] != nil {
		t.Errorf("run without -validation: %v", s)
	}
	out := mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-epochs", "1", "-validation", "0.25")
	_, held25 := hashSplitSizes(t, train, 0.25, 1, datasets.DomainValidation)
	if !strings.Contains(out, "validation accuracy") || strings.Contains(out, "test accuracy") || !strings.Contains(out, fmt.Sprintf("on %s validation examples", cli.Thousands(held25))) {
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

// TestValidationResumeLegacy: a checkpoint written before the split's rule was recorded
// (settings without validation-split, trained on the part of the embedded MNIST training
// set that the stratified datasets.HoldOut keeps) resumes on that same part: Restore's
// content fingerprint would refuse any other, and the run reports HoldOut's exact
// round(0.8·8000) = 6,400 examples. It warns once that its ε is per part trained on, and
// the checkpoint it writes keeps the old settings, so that it resumes again alike.
func TestValidationResumeLegacy(t *testing.T) {
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "new.ckpt"), filepath.Join(dir, "old.ckpt")
	mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-lr", "0.5", "-batch", "500", "-epochs", "1", "-seed", "7",
		"-validation", "0.2", "-split-seed", "4", "-checkpoint", fresh)
	c, err := checkpoint.Load(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings["validation-split"] != "content-hash" {
		t.Fatalf("a new run's settings %v: want validation-split content-hash", c.Settings)
	}
	settings := maps.Clone(c.Settings)
	delete(settings, "validation-split")
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	rest, val, err := datasets.HoldOut(train, 0.2, 4)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.ModelFromCheckpoint(c, 500) // the architecture of the command's logreg
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(7)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: rest, Test: val, Name: c.Dataset.Name},
		Settings: settings,
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule: training.Schedule{BatchSize: 500, Epochs: 1},
		Seed:     &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	clitest.Save(t, tr, old)
	const warning = "train: warning: -resume %s: its -validation split is the stratified one of earlier versions, made again as it was: its ε is per the part it trained on, not per the training set that was split"
	for range 2 { // the second resume reads the checkpoint the first one wrote
		code, stdout, stderr := runCmd(t, context.Background(), "-resume", old, "-checkpoint", old, "-epochs", "2", "-json")
		if code != exit.OK {
			t.Fatalf("resume of an old-style checkpoint: exit %d\n%s", code, stderr)
		}
		s := decodeSummary(t, stdout)
		if s["train_examples"] != 6400.0 || s["test_examples"] != 1600.0 || s["eval_split"] != "validation" {
			t.Errorf("resumed old-style run: %v; want 6,400 trained on, 1,600 validation examples", s)
		}
		if strings.Count(stderr, fmt.Sprintf(warning, old)) != 1 || strings.Count(stderr, "warning") != 1 {
			t.Errorf("resumed old-style run: stderr %q; want one warning on the split", stderr)
		}
		again, err := checkpoint.Load(old)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(again.Settings, settings) {
			t.Errorf("the resumed run's checkpoint settings %v; want the old ones %v", again.Settings, settings)
		}
	}
	// A new checkpoint resumes without the warning.
	code, _, stderr := runCmd(t, context.Background(), "-resume", fresh, "-epochs", "2")
	if code != exit.OK || strings.Contains(stderr, "warning") {
		t.Errorf("resume of a new checkpoint: exit %d, %q", code, stderr)
	}
	// An unknown rule is refused.
	bad := maps.Clone(c.Settings)
	bad["validation-split"] = "stratified"
	c.Settings = bad
	odd := filepath.Join(dir, "odd.ckpt")
	if err := checkpoint.Save(odd, c); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, context.Background(), "-resume", odd, "-epochs", "2"); code == exit.OK || !strings.Contains(stderr, `setting validation-split="stratified": unknown`) {
		t.Errorf("resume of a checkpoint with an unknown split rule: exit %d, %q", code, stderr)
	}
}

// TestOwnDataResumeLegacy: the same for the train/test split of csv: data: a checkpoint
// without test-split (trained on the training part of the stratified datasets.HoldOut,
// round(0.8·120) = 96 rows) resumes on that part with one warning; a new run records
// test-split content-hash and trains on what the content hash keeps.
func TestOwnDataResumeLegacy(t *testing.T) {
	path := writeBlobsCSV(t, 120)
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "new.ckpt"), filepath.Join(dir, "old.ckpt")
	args := []string{"-dataset", "csv:" + path, "-label", "species", "-scale", "0:10", "-model", "logreg", "-optimizer", "sgd", "-lr", "0.5", "-batch", "16", "-epochs", "1", "-seed", "7"}
	s := decodeSummary(t, mustRun(t, append(args, "-checkpoint", fresh, "-json")...))
	kept, held := blobsSplitSizes(t, path, 0.2, 1)
	if s["train_examples"] != float64(kept) || s["test_examples"] != float64(held) {
		t.Errorf("new run: %v; want %d trained on, %d test examples", s, kept, held)
	}
	c, err := checkpoint.Load(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings["test-split"] != "content-hash" {
		t.Fatalf("a new run's settings %v: want test-split content-hash", c.Settings)
	}
	settings := maps.Clone(c.Settings)
	delete(settings, "test-split")
	ranges, _ := datasets.ParseRanges("0:10")
	tab, err := datasets.LoadCSV(path, datasets.CSVOptions{Label: "species", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	rest, test, err := datasets.HoldOut(tab, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.ModelFromCheckpoint(c, 16)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(7)
	tr, err := training.NewTrainer(m, training.TrainerConfig{
		Data:     training.Data{Train: rest, Test: test, Name: c.Dataset.Name},
		Settings: settings,
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule: training.Schedule{BatchSize: 16, Epochs: 1},
		Seed:     &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	clitest.Save(t, tr, old)
	code, stdout, stderr := runCmd(t, context.Background(), "-resume", old, "-epochs", "2", "-json")
	if code != exit.OK {
		t.Fatalf("resume of an old-style checkpoint: exit %d\n%s", code, stderr)
	}
	if s := decodeSummary(t, stdout); s["train_examples"] != 96.0 || s["test_examples"] != 24.0 {
		t.Errorf("resumed old-style run: %v; want 96 trained on, 24 test examples", s)
	}
	want := "train: warning: -resume " + old + ": its train/test split (-test-fraction) is the stratified one of earlier versions"
	if strings.Count(stderr, want) != 1 || strings.Count(stderr, "warning") != 1 {
		t.Errorf("resumed old-style run: stderr %q; want one warning on the split", stderr)
	}
}

// TestValidationBadFlags: fractions outside [0, 1), fractions that hold out no example,
// and fractions that leave a class without a training example, are usage errors naming
// -validation. (A class without a validation example is a note, TestValidationNotes.)
func TestValidationBadFlags(t *testing.T) {
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if _, held := hashSplitSizes(t, train, 0.000001, 1, datasets.DomainValidation); held != 0 {
		t.Fatalf("-validation 0.000001 holds out %d examples with split seed 1; the case below wants none", held)
	}
	kept50, _ := hashSplitSizes(t, train, 0.5, 1, datasets.DomainValidation)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-validation", "-0.1"}, "-validation -0.1: want a fraction in [0, 1)"},
		{[]string{"-validation", "1"}, "-validation 1: want a fraction in [0, 1)"},
		{[]string{"-validation", "NaN"}, "-validation NaN: want a fraction in [0, 1)"},
		{[]string{"-validation", "Inf"}, "-validation +Inf: want a fraction in [0, 1)"},
		// 10⁻⁶·8000: none held out with split seed 1 (hashSplitSizes checks it below).
		{[]string{"-validation", "0.000001"}, "-validation 1e-06: fraction 1e-06 of 8000 examples (split seed 1) holds out 0 and leaves 8000 for training; both must be ≥ 1 (choose another fraction or -split-seed)"},
		{[]string{"-split-seed", "3"}, "-split-seed applies to -dataset csv:PATH or images:DIR, or with -validation"},
		{[]string{"-validation", "0.5", "-batch", "5000"}, fmt.Sprintf("-batch 5000 is larger than the training set (%s examples)", cli.Thousands(kept50))},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), append([]string{"-model", "logreg", "-epochs", "1"}, tc.args...)...)
		if code != exit.Usage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("train %v: exit %d, stderr %q; want exit 2 and one line containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestValidationOwnData: on csv: data the validation split is carved from the training
// part of the -test-fraction split, each by its own hash domain: 120 rows, about 30 %
// held out for test, then about 25 % of the rest for validation; the sizes are those of
// the two content-hash splits made here one after the other.
func TestValidationOwnData(t *testing.T) {
	path := writeBlobsCSV(t, 120)
	s := decodeSummary(t, mustRun(t, "-dataset", "csv:"+path, "-label", "species", "-scale", "0:10", "-test-fraction", "0.3", "-validation", "0.25",
		"-optimizer", "sgd", "-batch", "16", "-epochs", "1", "-json"))
	ranges, _ := datasets.ParseRanges("0:10")
	tab, err := datasets.LoadCSV(path, datasets.CSVOptions{Label: "species", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	rest, _, err := datasets.HashHoldOut(tab, 0.3, 1, datasets.DomainTest)
	if err != nil {
		t.Fatal(err)
	}
	kept, held := hashSplitSizes(t, rest, 0.25, 1, datasets.DomainValidation)
	if s["eval_split"] != "validation" || s["train_examples"] != float64(kept) || s["test_examples"] != float64(held) || s["validation_split_seed"] != 1.0 {
		t.Errorf("summary %v: want %d trained, %d validation examples, split seed 1", s, kept, held)
	}
}

// TestValidationClasses: a class whose every example the split holds out is refused (a
// usage error naming the class, the fraction and the split seed); a class that gives no
// validation example is trained on and named in a note. The data: 200 examples of class
// 0 and 3 of class 1; the split seeds of each case are found here by the rule
// (datasets.HashSplit), then the command's split is checked.
func TestValidationClasses(t *testing.T) {
	pix := make([]byte, 0, 4*203)
	labels := make([]byte, 203)
	for i := range 203 {
		pix = append(pix, byte(i), byte(i>>8), 7, 9)
		if i >= 200 {
			labels[i] = 1
		}
	}
	ds, err := datasets.NewImages([]int{1, 2, 2}, 2, pix, labels)
	if err != nil {
		t.Fatal(err)
	}
	const f = 0.5
	find := func(want func(kept1, held1 int) bool) uint64 {
		for seed := uint64(0); seed < 1000; seed++ {
			rest, picked, _ := datasets.HashSplit(ds, f, seed, datasets.DomainValidation)
			k, h := 0, 0
			for _, i := range rest {
				k += int(labels[i])
			}
			for _, i := range picked {
				h += int(labels[i])
			}
			if want(k, h) {
				return seed
			}
		}
		t.Fatal("no split seed below 1000 for the case")
		return 0
	}
	o := &options{validation: f}
	o.own.SplitSeed = find(func(kept1, _ int) bool { return kept1 == 0 })
	_, _, _, err = splitValidation(o, ds)
	want := fmt.Sprintf("-validation 0.5: class 1 has 3 training examples and the split (split seed %d) holds out every one, leaving none to train on", o.own.SplitSeed)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("class 1 wholly held out: err %v; want %q", err, want)
	}
	o.own.SplitSeed = find(func(_, held1 int) bool { return held1 == 0 })
	rest, val, notes, err := splitValidation(o, ds)
	if err != nil || classCounts(rest)[1] != 3 || len(notes) != 1 || !strings.Contains(notes[0], "no validation example of class 1 (3 examples)") {
		t.Errorf("class 1 wholly trained on (split seed %d): err %v, %d/%d examples, notes %q", o.own.SplitSeed, err, rest.Len(), val.Len(), notes)
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
		kept, held := hashSplitSizes(t, tr, 0.25, 3, datasets.DomainValidation)
		if ref["train_examples"] != float64(kept) || ref["test_examples"] != float64(held) || ref["eval_split"] != "validation" {
			t.Fatalf("-dataset %s -validation 0.25 on 600 training examples: %v; want %d trained, %d held out", ds, ref, kept, held)
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
		all, _, _, err := cli.LoadTrainData(tc.dataset, dir, &cli.DataFlags{Labels: "fine"})
		if err != nil {
			t.Fatal(err)
		}
		kept, held := hashSplitSizes(t, all, 0.25, 1, datasets.DomainValidation)
		if all.Len() != 40 || s["train_examples"] != float64(kept) || s["test_examples"] != float64(held) || s["eval_split"] != "validation" {
			t.Errorf("-dataset %s without %s, -validation 0.25 of %d examples: %v; want %d trained, %d held out", tc.dataset, tc.testFile, all.Len(), s, kept, held)
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
