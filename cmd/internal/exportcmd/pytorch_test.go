package exportcmd

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

// python is the interpreter the PyTorch test runs: Debian's, where python3-torch
// installs PyTorch.
const python = "/usr/bin/python3"

// runModules is the Python side of TestPyTorchEveryModel, one process for every model:
// for each entry of the manifest (argv[1]) it imports the exported module from its file,
// load_model()s it with its default parameter file, reads the inputs (float32, little
// endian, n examples of INPUT_SHAPE) and writes predict_proba's probabilities (float64).
//
// Then it checks that load_model refuses the parameter files in "refuse" (another
// model's, a truncated one, one whose header is no JSON) with a ValueError that says why.
const runModules = `
import importlib.util, json, sys, time
import numpy as np
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
manifest = json.load(open(sys.argv[1]))
for i, e in enumerate(manifest["models"]):
    t0 = time.time()
    mod = load(e["module"], "exported%d" % i)
    model = mod.load_model()
    x = np.fromfile(e["x"], dtype="<f4").reshape((e["n"],) + tuple(mod.INPUT_SHAPE))
    p = mod.predict_proba(model, x)
    if tuple(p.shape) != (e["n"], mod.NUM_CLASSES):
        sys.exit("%s: probabilities of shape %s" % (e["module"], tuple(p.shape)))
    p.numpy().astype("<f8").tofile(e["out"])
    print("%s: %.2f s" % (e["name"], time.time() - t0))
mod = load(manifest["models"][0]["module"], "refusing")
for path, why in manifest["refuse"]:
    try:
        mod.load_model(path)
    except ValueError as err:
        if why not in str(err):
            sys.exit("load_model(%s): %s; want an error saying %r" % (path, err, why))
        print("refused %s: %s" % (path, err))
    else:
        sys.exit("load_model(%s) loaded it; want a ValueError" % path)
`

// TestPyTorchEveryModel exports every built-in model (each -model of train, the scatter
// models on both image sizes and with other channel counts, one float64, a model trained
// on CSV data, and the pooling and normalisation layers no built-in model uses) with
// -pytorch, runs the modules in PyTorch on inputs the models have not seen, and compares
// predict_proba's probabilities with nn.Predictor's, what predict prints, to 1e-4. The
// checkpoints are trained for two steps of SGD from their random start, so no parameter
// is at its initial value (biases are not zero). It needs /usr/bin/python3 with torch and
// numpy and skips without them, or with -short.
func TestPyTorchEveryModel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 20 models and runs PyTorch")
	}
	if out, err := exec.Command(python, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("%s has no torch and numpy (Debian: apt install python3-torch): %v %s", python, err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	mnistTrain, mnistTest := clitest.MNIST(t, 64)
	digits := make([]float32, 8*784)
	for i := range 8 {
		mnistTest.Example(i, digits[i*784:(i+1)*784])
	}
	type testCase struct {
		spec  nn.Spec
		train datasets.Dataset
		opts  []nn.Option
		x     []float32 // 8 examples
		ckpt  string    // set instead of spec for a checkpoint of own data
		lr    float64   // the checkpoint's learning rate when not clitest.Checkpoint's
	}
	random := func(shape []int) ([]float32, datasets.Dataset) {
		return uniform(8*num.Prod(shape), uint64(num.Prod(shape))), clitest.Random(t, shape, 10, 64)
	}
	with := func(spec nn.Spec, shape []int, groups int) nn.Spec {
		spec.Name += fmt.Sprintf("-%dx%dx%d", shape[0], shape[1], shape[2])
		spec.InputShape = shape
		spec.Layers = append([]layers.Layer(nil), spec.Layers...)
		spec.Layers[1] = layers.GroupNorm{Groups: groups, NoAffine: true} // as train sizes it
		return spec
	}
	var cases []testCase
	for _, spec := range append(models.Builtin(),
		nn.Spec{Name: "mlp-32-tanh", InputShape: []int{1, 28, 28}, NumClasses: 10, Layers: []layers.Layer{ // train -model mlp -hidden 32
			layers.Flatten{}, layers.Dense{Units: 32}, layers.Tanh{}, layers.Dense{Units: 10}}},
		with(models.ScatterCNNMNIST(models.Tanh), []int{3, 28, 28}, 81),
		with(models.ScatterLinearCIFAR10(), []int{1, 32, 32}, 27),
		nn.Spec{Name: "pool-norm", InputShape: []int{3, 32, 32}, NumClasses: 10, Layers: []layers.Layer{
			layers.CenterCrop{Height: 27, Width: 30}, // odd margins
			layers.Conv2D{Filters: 8, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}, layers.GroupNorm{Groups: 2}, layers.ReLU{},
			layers.AvgPool2D{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}},
			layers.Conv2D{Filters: 8, Kernel: [2]int{3, 3}}, layers.GroupNorm{Groups: 8, NoAffine: true}, layers.Tanh{},
			layers.GlobalAvgPool2D{}, layers.Flatten{}, layers.Dense{Units: 10}}},
	) {
		c := testCase{spec: spec, train: mnistTrain, x: digits}
		if spec.Name == "resnet-klause" { // at 0.5 its softmax saturates: every example alike
			c.lr = 0.02
		}
		if spec.InputShape[1] != 28 || spec.InputShape[0] != 1 {
			c.x, c.train = random(spec.InputShape)
		}
		cases = append(cases, c)
	}
	// A network written as JSON (train -model FILE.json), none of the built-in ones.
	var own nn.Architecture
	if b, err := os.ReadFile("../../../examples/models/small-res-cnn.json"); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &own); err != nil {
		t.Fatal(err)
	}
	own.InputShape, own.NumClasses = []int{1, 28, 28}, 10
	ownSpec, err := nn.SpecOf(&own, "small-res-cnn")
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, testCase{spec: ownSpec, train: mnistTrain, x: digits})
	f64 := models.ScatterLinearMNIST()
	f64.Name += "-float64"
	cases = append(cases, testCase{spec: f64, train: mnistTrain, x: digits, opts: []nn.Option{nn.WithDType(nn.Float64)}})
	csvDir := filepath.Join(dir, "csv")
	if err := os.Mkdir(csvDir, 0o755); err != nil {
		t.Fatal(err)
	}
	csvCkpt, _, _ := clitest.OwnData(t, csvDir, nn.Spec{Name: "logreg-csv", Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 1}}},
		"csv:"+clitest.TableCSV(t, csvDir, 60), "", cli.DataFlags{Label: "kind", Header: "auto", Scale: "0:10,0:10,-2:12", TestFraction: 0.2, SplitSeed: 1, Labels: "fine"})
	cases = append(cases, testCase{spec: nn.Spec{Name: "logreg-csv"}, ckpt: csvCkpt, x: uniform(8*3, 5)})

	type entry struct {
		Name   string `json:"name"`
		Module string `json:"module"`
		X      string `json:"x"`
		Out    string `json:"out"`
		N      int    `json:"n"`
	}
	var manifest []entry
	want := map[string][]float64{}
	start := time.Now()
	for i, c := range cases {
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		ckpt := c.ckpt
		if ckpt == "" && c.lr > 0 {
			ckpt = clitest.CheckpointLR(t, sub, c.spec, c.train, c.lr, c.opts...)
		} else if ckpt == "" {
			ckpt = clitest.Checkpoint(t, sub, c.spec, c.train, c.opts...)
		}
		t.Logf("%s: %.1f s", c.spec.Name, time.Since(t0).Seconds())
		module := filepath.Join(sub, "model.py")
		if code, _, stderr := runExport("-checkpoint", ckpt, "-pytorch", module, "-q"); code != 0 {
			t.Fatalf("%s: export -pytorch: exit %d: %s", c.spec.Name, code, stderr)
		}
		p, err := nn.LoadPredictor(ckpt)
		if err != nil {
			t.Fatal(err)
		}
		probs := make([]float64, 8*p.NumClasses())
		if err := p.Probabilities(c.x, probs); err != nil {
			t.Fatalf("%s: %v", c.spec.Name, err)
		}
		want[c.spec.Name] = probs
		e := entry{Name: c.spec.Name, Module: module, X: filepath.Join(sub, "x.bin"), Out: filepath.Join(sub, "p.bin"), N: 8}
		writeLE(t, e.X, c.x)
		manifest = append(manifest, e)
	}
	t.Logf("%d checkpoints and exports: %.1f s", len(cases), time.Since(start).Seconds())
	// The first model's module with the second's parameters, and with a truncated file.
	params0 := filepath.Join(filepath.Dir(manifest[0].Module), "model.safetensors")
	b, err := os.ReadFile(params0)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.safetensors")
	if err := os.WriteFile(truncated, b[:len(b)-4], 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.safetensors") // a header length, then no JSON
	if err := os.WriteFile(garbage, append([]byte{4, 0, 0, 0, 0, 0, 0, 0}, "{{{{"...), 0o600); err != nil {
		t.Fatal(err)
	}
	refuse := [][2]string{
		{garbage, "not a safetensors file"},
		{filepath.Join(filepath.Dir(manifest[1].Module), "model.safetensors"), "holds the parameters of another model (" + manifest[1].Name + ")"},
		{truncated, "do not hold F32"},
	}
	b, err = json.Marshal(map[string]any{"models": manifest, "refuse": refuse})
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(list, b, 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	out, err := exec.Command(python, "-c", runModules, list).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	t.Logf("PyTorch: %.1f s in all\n%s", time.Since(start).Seconds(), out)
	for _, e := range manifest {
		got := readLE(t, e.Out)
		ours := want[e.Name]
		if len(got) != len(ours) {
			t.Errorf("%s: %d probabilities from PyTorch, %d from predict", e.Name, len(got), len(ours))
			continue
		}
		worst, spread := 0.0, 0.0
		for i, v := range got {
			worst = max(worst, math.Abs(v-ours[i]))
			spread = max(spread, math.Abs(ours[i]-ours[i%(len(ours)/8)])) // examples differ from the first
		}
		if worst > 1e-4 || math.IsNaN(worst) {
			t.Errorf("%s: PyTorch's probabilities differ from predict's by up to %.3g, want ≤ 1e-4", e.Name, worst)
		}
		if spread < 1e-3 {
			t.Errorf("%s: predict gives every example the same probabilities (to %.2g): the comparison shows little", e.Name, spread)
		}
		t.Logf("%-28s max |PyTorch − predict| = %.2g", e.Name, worst)
	}
}

// uniform returns n values uniform in [0, 1).
func uniform(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()
	}
	return x
}

func writeLE(t *testing.T, path string, x []float32) {
	t.Helper()
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readLE(t *testing.T, path string) []float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}
