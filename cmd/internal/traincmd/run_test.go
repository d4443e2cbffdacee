package traincmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// runCmd runs the command with args and returns its exit status, stdout and stderr.
func runCmd(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("train %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// sameBits fails t at the first value where resumed and whole differ in any bit: a resumed
// (or otherwise re-run) training against the uninterrupted one.
func sameBits(t *testing.T, what string, resumed, whole []float64) {
	t.Helper()
	if len(resumed) != len(whole) {
		t.Fatalf("%s: resumed %d values, uninterrupted %d", what, len(resumed), len(whole))
	}
	for i := range whole {
		if math.Float64bits(resumed[i]) != math.Float64bits(whole[i]) {
			t.Fatalf("%s %d: resumed %v, uninterrupted %v", what, i, resumed[i], whole[i])
		}
	}
}

// sameCheckpointParams is sameBits on the parameters of the checkpoints at resumed and
// whole.
func sameCheckpointParams(t *testing.T, what, resumed, whole string) {
	t.Helper()
	got, err := checkpoint.Load(resumed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := checkpoint.Load(whole)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, what, got.Params, want.Params)
}

func decodeSummary(t *testing.T, out string) map[string]any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("-json output %q: %v", out, err)
	}
	return s
}

// TestDefaultRunShort runs the command as "go run ./cmd/train" does, with no setup: the
// default DP-SGD CNN on the embedded sample, shortened to three epochs (12 steps, so the
// accuracy is still far from the full run's 95 %). It must print a test accuracy well
// above chance and an ε within the default budget of 3.
func TestDefaultRunShort(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the CNN for an epoch")
	}
	out := mustRun(t, "-epochs", "3")
	m := regexp.MustCompile(`test accuracy\s+([0-9.]+)%`).FindStringSubmatch(out)
	e := regexp.MustCompile(`\(ε = ([0-9.]+), δ = 1e-05\)`).FindStringSubmatch(out)
	if m == nil || e == nil {
		t.Fatalf("summary lacks accuracy or ε:\n%s", out)
	}
	acc, _ := strconv.ParseFloat(m[1], 64)
	eps, _ := strconv.ParseFloat(e[1], 64)
	if acc < 25 || eps > 3 || eps < 2.9 {
		t.Errorf("accuracy %v%%, ε = %v: want well above chance and ε just below 3", acc, eps)
	}
	for _, want := range []string{"mnist-cnn-tanh", "DP-SGD", "secure", "Poisson", "examples/s", "optimal order"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not mention %q:\n%s", want, out)
		}
	}
}

// TestJSONSummary: logistic regression with DP-SGD on the embedded sample. The reported ε
// must be the accountant's value for the reported plan, computed here in a fresh ledger,
// and the accuracy far above chance (10 %).
func TestJSONSummary(t *testing.T) {
	out := mustRun(t, "-model", "logreg", "-batch", "256", "-lr", "2", "-epochs", "3", "-json")
	s := decodeSummary(t, out)
	for _, k := range []string{"test_accuracy", "epsilon", "delta", "noise_multiplier", "sample_rate", "steps", "epochs", "wall_seconds", "examples_per_second"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	q, z, steps := s["sample_rate"].(float64), s["noise_multiplier"].(float64), int(s["steps"].(float64))
	if q != 256.0/8000 || steps != 3*32 {
		t.Errorf("q = %v, %d steps; want 256/8000 and 3·⌈8000/256⌉ = 96", q, steps)
	}
	l := accountant.NewLedger()
	if err := l.Record(q, z, steps); err != nil {
		t.Fatal(err)
	}
	want, _ := l.Epsilon(1e-5)
	eps := s["epsilon"].(float64)
	if math.Abs(eps-want.Epsilon) > 1e-12*want.Epsilon || s["rdp_order"].(float64) != want.Order {
		t.Errorf("reported ε = %v (order %v), accountant %v (order %v)", eps, s["rdp_order"], want.Epsilon, want.Order)
	}
	if eps > 3 {
		t.Errorf("ε = %v above the default target 3", eps)
	}
	if acc := s["test_accuracy"].(float64); acc < 0.75 {
		t.Errorf("test accuracy %v, want > 0.75 (logistic regression reaches about 0.85 here)", acc)
	}
	if s["wall_seconds"].(float64) <= 0 || s["examples_per_second"].(float64) <= 0 || s["noise"] != "secure" {
		t.Errorf("summary %v", s)
	}
}

func TestNonPrivate(t *testing.T) {
	s := decodeSummary(t, mustRun(t, "-model", "logreg", "-optimizer", "adam", "-lr", "0.01", "-batch", "256", "-epochs", "2", "-json"))
	if s["epsilon"] != nil || s["private"] != false || s["noise"] != "none" {
		t.Errorf("non-private summary %v: want epsilon null, private false", s)
	}
	if acc := s["test_accuracy"].(float64); acc < 0.85 {
		t.Errorf("adam logistic regression test accuracy %v, want > 0.85", acc)
	}
	out := mustRun(t, "-model", "logreg", "-optimizer", "sgd", "-epochs", "1")
	if !strings.Contains(out, "ε = ∞") {
		t.Errorf("text summary of a non-private run does not say ε = ∞:\n%s", out)
	}
}

// TestPrivateInfiniteEpsilon: a private run whose noise is too small for any finite ε (the
// accountant's RDP is +Inf below z = 1e-100) finishes and says ε = ∞ in both summaries.
func TestPrivateInfiniteEpsilon(t *testing.T) {
	args := []string{"-model", "logreg", "-noise", "1e-200", "-epochs", "1"}
	out := mustRun(t, args...)
	if !strings.Contains(out, "ε = ∞") {
		t.Errorf("text summary of a private run with ε = ∞ does not say so:\n%s", out)
	}
	s := decodeSummary(t, mustRun(t, append(args, "-json")...))
	if s["epsilon"] != nil || s["private"] != true {
		t.Errorf("summary %v: want private true, epsilon null (∞)", s)
	}
}

// TestBadFlags: every bad command line exits with status 2 and one line on stderr that
// names the problem.
func TestBadFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-epsilon", "0"}, "-epsilon"},
		{[]string{"-epsilon", "-1"}, "-epsilon"},
		{[]string{"-epsilon", "NaN"}, "-epsilon"},
		{[]string{"-delta", "2"}, "-delta"},
		{[]string{"-delta", "0"}, "-delta"},
		{[]string{"-batch", "9000"}, "-batch"},
		{[]string{"-batch", "0"}, "-batch"},
		{[]string{"-physical-batch", "0"}, "-physical-batch"},
		{[]string{"-epochs", "0"}, "-epochs"},
		{[]string{"-model", "resnet"}, "-model"},
		{[]string{"-optimizer", "rmsprop"}, "-optimizer"},
		{[]string{"-dataset", "imagenet"}, "-dataset"},
		{[]string{"-activation", "gelu"}, "-activation"},
		{[]string{"-clipping", "auto"}, "-clipping"},
		{[]string{"-sampling", "uniform"}, "-sampling"},
		{[]string{"-data", missing}, "-data"},
		{[]string{"-dataset", "fashion-mnist", "-data", missing}, "apt install dataset-fashion-mnist"},
		{[]string{"-dataset", "cifar10"}, "-data"},
		{[]string{"-dataset", "cifar10", "-data", missing}, "cifar"},
		{[]string{"-model", "cifar-cnn"}, "-model"},
		{[]string{"-dataset", "cifar10", "-model", "cnn", "-data", "."}, "-model"},
		{[]string{"-noise", "1", "-epsilon", "3"}, "-noise and -epsilon"},
		{[]string{"-noise", "0"}, "-noise"},
		{[]string{"-optimizer", "sgd", "-epsilon", "3"}, "not private"},
		{[]string{"-optimizer", "adam", "-noise", "1"}, "not private"},
		{[]string{"-optimizer", "sgd", "-clip", "1"}, "not private"},
		{[]string{"-lr", "-1"}, "-lr"},
		{[]string{"-lr", "Inf"}, "-lr"},
		{[]string{"-momentum", "1"}, "-momentum"},
		{[]string{"-optimizer", "dp-adam", "-momentum", "0.5"}, "-momentum"},
		{[]string{"-ls-sigma", "2"}, "-ls-sigma"},
		{[]string{"-optimizer", "dp-lssgd", "-ls-sigma", "-1"}, "-ls-sigma"},
		{[]string{"-lr-schedule", "exponential"}, "-lr-schedule"},
		{[]string{"-lr-schedule", "step:x:0.1"}, "-lr-schedule"},
		{[]string{"-lr-schedule", "step:10"}, "-lr-schedule"},
		{[]string{"-optimizer", "adp-sgd", "-lr-schedule", "inverse-time"}, "-lr-schedule"},
		{[]string{"-clip", "0"}, "-clip"},
		{[]string{"-checkpoint-every", "5"}, "-checkpoint"},
		{[]string{"-plot", "out.jpg"}, "-plot"},
		{[]string{"-resume", missing}, "-resume"},
		{[]string{"-epsilon", "0.001", "-model", "logreg"}, "ε"},
		{[]string{"-bogus"}, "bogus"},
		{[]string{"-epochs", "x"}, "-epochs"},
		{[]string{"extra"}, "extra"},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), tc.args...)
		if code != exit.Usage {
			t.Errorf("train %s: exit %d, want 2 (stderr %q)", strings.Join(tc.args, " "), code, stderr)
			continue
		}
		if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "train: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("train %s: stderr %q, want one line mentioning %q", strings.Join(tc.args, " "), stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("train %s: wrote %q to stdout", strings.Join(tc.args, " "), stdout)
		}
	}
}

func TestHelp(t *testing.T) {
	code, stdout, _ := runCmd(t, context.Background(), "-help")
	if code != exit.OK {
		t.Fatalf("-help: exit %d", code)
	}
	for _, f := range []string{"model", "activation", "dataset", "data", "optimizer", "lr", "lr-schedule", "momentum",
		"batch", "physical-batch", "epochs", "clip", "clipping", "noise", "epsilon", "delta", "ls-sigma", "seed",
		"float64", "checkpoint", "checkpoint-every", "resume", "metrics", "plot", "json", "sampling"} {
		if !strings.Contains(stdout, "\n  -"+f+" ") && !strings.Contains(stdout, "\n  -"+f+"\n") {
			t.Errorf("-help does not list -%s", f)
		}
	}
	for _, o := range optimizerNames {
		if !strings.Contains(stdout, o) {
			t.Errorf("-help does not name optimizer %s", o)
		}
	}
}

// TestResume: two epochs, a checkpoint, and one more epoch resumed from it (with no flags
// but -resume and -epochs) equal three uninterrupted epochs: parameters bit for bit and
// the same ε. Resuming beyond the calibrated budget, or with other settings, is refused.
func TestResume(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt")
	common := []string{"-model", "logreg", "-seed", "7", "-noise", "1.1", "-batch", "500", "-json"}
	whole := decodeSummary(t, mustRun(t, append(common, "-epochs", "3", "-checkpoint", a)...))
	mustRun(t, append(common, "-epochs", "2", "-checkpoint", b)...)
	resumed := decodeSummary(t, mustRun(t, "-resume", b, "-epochs", "3", "-checkpoint", b, "-json"))
	if whole["epsilon"] != resumed["epsilon"] || whole["steps"] != resumed["steps"] || whole["test_accuracy"] != resumed["test_accuracy"] {
		t.Errorf("uninterrupted %v\nresumed %v", whole, resumed)
	}
	ca, err := checkpoint.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := checkpoint.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Step != 48 || cb.Step != 48 {
		t.Fatalf("checkpoints at steps %d and %d, want 48", ca.Step, cb.Step)
	}
	sameBits(t, "parameter", cb.Params, ca.Params)

	// A calibrated run resumed beyond its plan would exceed the target ε.
	c := filepath.Join(dir, "c.ckpt")
	mustRun(t, "-model", "logreg", "-epochs", "2", "-batch", "500", "-checkpoint", c)
	code, _, stderr := runCmd(t, context.Background(), "-resume", c, "-epochs", "3")
	if code != exit.Usage || !strings.Contains(stderr, "target ε = 3") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("resuming past the budget: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCmd(t, context.Background(), "-resume", c, "-lr", "5")
	if code != exit.Usage || !strings.Contains(stderr, "lr") {
		t.Errorf("resuming with another -lr: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCmd(t, context.Background(), "-resume", c, "-model", "cnn")
	if code != exit.Usage || !strings.Contains(stderr, "model") {
		t.Errorf("resuming with another -model: exit %d, %q", code, stderr)
	}
	// Finished runs resume to nothing more and report the same result.
	s := decodeSummary(t, mustRun(t, "-resume", c, "-json"))
	if s["steps"].(float64) != 2*16 {
		t.Errorf("resumed finished run reports %v steps", s["steps"])
	}
	if err := os.WriteFile(c, []byte("not a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, context.Background(), "-resume", c)
	if code != exit.Failure || !strings.Contains(stderr, "not a privtrain checkpoint") {
		t.Errorf("resuming from garbage: exit %d, %q", code, stderr)
	}
}

// TestInterrupt cancels the context (as Ctrl-C does) after step 5: the run stops after
// that step, writes its checkpoint and exits with status 130; resuming finishes the run
// exactly as an uninterrupted one.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	ckpt, full := filepath.Join(dir, "run.ckpt"), filepath.Join(dir, "full.ckpt")
	args := []string{"-model", "logreg", "-epochs", "2", "-batch", "1000", "-seed", "3", "-checkpoint"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stepHook = func(p training.StepProgress) {
		if p.GlobalStep == 5 {
			cancel()
		}
	}
	code, stdout, stderr := runCmd(t, ctx, append(args, ckpt)...)
	stepHook = nil
	if code != exit.Interrupted || stdout != "" {
		t.Fatalf("interrupted run: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "interrupted after step 5 of 16") || !strings.Contains(stderr, "-resume "+ckpt) {
		t.Errorf("stderr %q", stderr)
	}
	c, err := checkpoint.Load(ckpt)
	if err != nil || c.Step != 5 {
		t.Fatalf("checkpoint after interrupt: %v, %v", c, err)
	}
	mustRun(t, "-resume", ckpt, "-checkpoint", ckpt)
	mustRun(t, append(args, full)...)
	sameCheckpointParams(t, "parameter after interrupt", ckpt, full)
	// Without -checkpoint the interrupt says how to keep the state next time.
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	code, _, stderr = runCmd(t, ctx2, "-model", "logreg", "-epochs", "1")
	if code != exit.Interrupted || !strings.Contains(stderr, "no checkpoint") {
		t.Errorf("interrupt without -checkpoint: exit %d, %q", code, stderr)
	}
}

// TestMetricsAndPlot checks the per-epoch JSON lines and that the plot is a PNG.
func TestMetricsAndPlot(t *testing.T) {
	dir := t.TempDir()
	metrics, plot := filepath.Join(dir, "m.jsonl"), filepath.Join(dir, "p.png")
	mustRun(t, "-model", "logreg", "-epochs", "3", "-batch", "400", "-metrics", metrics, "-plot", plot)
	f, err := os.Open(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var last float64
	lines := 0
	for sc.Scan() {
		lines++
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		for _, k := range []string{"epoch", "step", "loss", "train_accuracy", "test_accuracy", "epsilon", "seconds"} {
			if _, ok := r[k]; !ok {
				t.Errorf("line %d lacks %q", lines, k)
			}
		}
		if int(r["epoch"].(float64)) != lines || int(r["step"].(float64)) != 20*lines || r["epsilon"].(float64) <= last {
			t.Errorf("line %d: %v", lines, r)
		}
		last = r["epsilon"].(float64)
	}
	if lines != 3 || last > 3 {
		t.Errorf("%d lines, final ε %v", lines, last)
	}
	pf, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	cfg, err := png.DecodeConfig(pf)
	if err != nil || cfg.Width < 300 || cfg.Height < 300 {
		t.Errorf("plot: %+v, %v", cfg, err)
	}
}

// writeIDX writes ds in MNIST's IDX format (raw) under dir with the given file names.
func writeIDX(t *testing.T, dir, images, labels string, ds datasets.Dataset) {
	t.Helper()
	var img, lab bytes.Buffer
	n := ds.Len()
	for _, v := range []uint32{0x803, uint32(n), 28, 28} {
		binary.Write(&img, binary.BigEndian, v)
	}
	for _, v := range []uint32{0x801, uint32(n)} {
		binary.Write(&lab, binary.BigEndian, v)
	}
	x := make([]float32, 784)
	for i := range n {
		l := ds.Example(i, x)
		for _, p := range x {
			img.WriteByte(byte(math.Round(float64(p) * 255)))
		}
		lab.WriteByte(byte(l))
	}
	for name, b := range map[string][]byte{images: img.Bytes(), labels: lab.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDataDir trains from IDX files in a directory, as -data DIR reads MNIST and
// Fashion-MNIST.
func TestDataDir(t *testing.T) {
	train, test, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := datasets.StratifiedSubset(train, 600)
	te, _ := datasets.StratifiedSubset(test, 200)
	dir := t.TempDir()
	writeIDX(t, dir, mnist.TrainImages, mnist.TrainLabels, tr)
	writeIDX(t, dir, mnist.TestImages, mnist.TestLabels, te)
	for _, ds := range []string{"mnist", "fashion-mnist"} {
		s := decodeSummary(t, mustRun(t, "-dataset", ds, "-data", dir, "-model", "logreg", "-batch", "60", "-epochs", "2", "-json"))
		if s["dataset"] != ds || s["train_examples"].(float64) != 600 || s["test_examples"].(float64) != 200 {
			t.Errorf("-dataset %s -data DIR: %v", ds, s)
		}
	}
	empty := t.TempDir()
	code, _, stderr := runCmd(t, context.Background(), "-data", empty)
	if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-data") {
		t.Errorf("-data with no files: exit %d, %q", code, stderr)
	}
}

// TestCIFAR trains the CIFAR-10 CNN (chosen by -dataset cifar10 without -model) on a few
// synthetic records in CIFAR-10's binary layout.
func TestCIFAR(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the 1M-parameter CIFAR network")
	}
	dir := t.TempDir()
	record := func(i int) []byte {
		r := make([]byte, 3073)
		r[0] = byte(i % 10)
		for j := 1; j < len(r); j++ {
			r[j] = byte(i * j)
		}
		return r
	}
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		var b []byte
		for i := range 8 {
			b = append(b, record(i)...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := decodeSummary(t, mustRun(t, "-dataset", "cifar10", "-data", dir, "-batch", "20", "-physical-batch", "10", "-epochs", "1", "-json"))
	if s["model"] != "cifar10-cnn-tanh" || s["train_examples"].(float64) != 40 || s["epsilon"].(float64) > 3 {
		t.Errorf("cifar10 run: %v", s)
	}
}

// TestOptimizers runs every private optimizer briefly: each must train and stay within ε.
func TestOptimizers(t *testing.T) {
	for _, o := range optimizerNames {
		args := []string{"-model", "logreg", "-optimizer", o, "-epochs", "1", "-batch", "400", "-json"}
		if o == "dp-sgd" {
			args = append(args, "-clipping", "per-layer", "-sampling", "shuffle", "-float64", "-lr-schedule", "step:10:0.5")
		}
		code, stdout, stderr := runCmd(t, context.Background(), args...)
		if code != exit.OK {
			t.Errorf("-optimizer %s: exit %d: %s", o, code, stderr)
			continue
		}
		s := decodeSummary(t, stdout)
		if private(o) && (s["epsilon"] == nil || s["epsilon"].(float64) > 3) {
			t.Errorf("-optimizer %s: ε = %v", o, s["epsilon"])
		}
		if acc := s["test_accuracy"].(float64); acc < 0.3 {
			t.Errorf("-optimizer %s: test accuracy %v after one epoch", o, acc)
		}
		if o == "dp-sgd" && !strings.Contains(stderr, "warning: shuffled") {
			t.Errorf("shuffled batches without a warning: %s", stderr)
		}
	}
}

// TestAccountantFlag: -accountant pld calibrates less noise for the same target and
// reports the PLD ε of the plan; a checkpoint written under RDP and resumed under PLD
// reports the PLD ε of the same history (and the statement names the accountant, its
// discretisation and δ).
func TestAccountantFlag(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "r.ckpt")
	common := []string{"-model", "logreg", "-seed", "3", "-batch", "1000", "-lr", "2", "-epochs", "2"}
	rdp := decodeSummary(t, mustRun(t, append(common, "-checkpoint", ck, "-json")...))
	pld := decodeSummary(t, mustRun(t, append(common, "-accountant", "pld", "-json")...))
	q, steps := rdp["sample_rate"].(float64), int(rdp["steps"].(float64))
	zr, zp := rdp["noise_multiplier"].(float64), pld["noise_multiplier"].(float64)
	if rdp["accountant"] != "rdp/balle" || pld["accountant"] != "pld" || zp >= zr {
		t.Errorf("accountants %v, %v; z = %v (rdp), %v (pld): want less noise by PLD", rdp["accountant"], pld["accountant"], zr, zp)
	}
	want, err := accountant.PLD{}.Epsilon([]accountant.Segment{{Q: q, Z: zp, Steps: steps}}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if e := pld["epsilon"].(float64); e != want.Epsilon || e > 3 {
		t.Errorf("PLD run reports ε = %v, the PLD accountant gives %v (target 3)", e, want.Epsilon)
	}
	// The RDP run's checkpoint, resumed (to nothing more) under each accountant.
	again := decodeSummary(t, mustRun(t, "-resume", ck, "-json"))
	if again["epsilon"] != rdp["epsilon"] || again["accountant"] != "rdp/balle" {
		t.Errorf("resumed under RDP: %v, want %v", again["epsilon"], rdp["epsilon"])
	}
	code, out, stderr := runCmd(t, context.Background(), "-resume", ck, "-accountant", "pld")
	if code != 0 {
		t.Fatalf("resume under PLD: exit %d: %s", code, stderr)
	}
	wantR, _ := accountant.PLD{}.Epsilon([]accountant.Segment{{Q: q, Z: zr, Steps: steps}}, 1e-5)
	line := fmt.Sprintf("(ε = %.4f, δ = 1e-05) by the PLD accountant (pessimistic connect-the-dots discretisation Δ = 0.0001", wantR.Epsilon)
	if !strings.Contains(out, line) || wantR.Epsilon >= rdp["epsilon"].(float64) {
		t.Errorf("resumed under PLD: want %q (RDP ε %v):\n%s", line, rdp["epsilon"], out)
	}
	if !strings.Contains(stderr, "spends ε = ") || !strings.Contains(stderr, "connect-the-dots") {
		t.Errorf("plan line does not name the PLD accountant:\n%s", stderr)
	}
	if code, _, stderr := runCmd(t, context.Background(), "-accountant", "moments"); code != 2 || !strings.Contains(stderr, "-accountant") {
		t.Errorf("bad -accountant: exit %d, %q", code, stderr)
	}
}
