package exportcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

func runExport(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExport(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 256)
	ckpt := clitest.Checkpoint(t, dir, models.MNISTCNN(models.ReLU), train)
	out := filepath.Join(dir, "m.safetensors")
	code, stdout, stderr := runExport("-checkpoint", ckpt, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "nn.Linear(512, 32, bias=True)") || !strings.Contains(stdout, "26,010 parameters") {
		t.Errorf("stdout:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tensorfile.DecodeSafetensors(b)
	if err != nil {
		t.Fatal(err)
	}
	// The Sequential's indices: conv 0, relu 1, pool 2, conv 3, relu 4, pool 5, flatten 6,
	// linear 7, relu 8, linear 9.
	want := map[string][]int{"0.weight": {16, 1, 8, 8}, "0.bias": {16}, "3.weight": {32, 16, 4, 4}, "3.bias": {32},
		"7.weight": {32, 512}, "7.bias": {32}, "9.weight": {10, 32}, "9.bias": {10}}
	if len(f.Tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
	}
	for name, shape := range want {
		if tt, ok := f.Tensors[name]; !ok || !slices.Equal(tt.Shape, shape) || tt.DType != tensorfile.Float32 {
			t.Errorf("%s: %+v, want F32 %v", name, tt.Shape, shape)
		}
	}
	// The dense weights are the checkpoint's transposed.
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	w9, _ := f.Tensors["9.weight"].Float32s()
	off := c.Params[len(c.Params)-330:] // dense2.weight [32, 10], then bias [10]
	for i := range 32 {
		for o := range 10 {
			if float64(w9[o*32+i]) != off[i*10+o] {
				t.Fatalf("9.weight[%d][%d] = %v, checkpoint dense2.weight[%d][%d] = %v", o, i, w9[o*32+i], i, o, off[i*10+o])
			}
		}
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v)", st.Mode().Perm(), err)
	}
	if code, stdout, _ := runExport("-checkpoint", ckpt, "-o", out, "-q"); code != 0 || stdout != "" {
		t.Errorf("-q: exit %d, output %q", code, stdout)
	}

	// Usage errors: exit 2, one line naming the problem.
	bad := filepath.Join(dir, "bad.ckpt")
	if err := os.WriteFile(bad, []byte("not a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-o", out}, 2, "-checkpoint FILE is required"},
		{[]string{"-checkpoint", ckpt}, 2, "-o FILE is required"},
		{[]string{"-checkpoint", ckpt, "-o", ckpt}, 2, "is the checkpoint itself"},
		{[]string{"-checkpoint", filepath.Join(dir, "none.ckpt"), "-o", out}, 2, "no such file"},
		{[]string{"-checkpoint", ckpt, "-o", filepath.Join(dir, "no", "m.safetensors")}, 2, "does not exist"},
		{[]string{"-checkpoint", ckpt, "-o", out, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"-bogus"}, 2, "flag provided but not defined"},
		{[]string{"-checkpoint", bad, "-o", out}, 1, "bad.ckpt"},
	} {
		code, _, stderr := runExport(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "export: ") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if code, stdout, _ := runExport("-help"); code != 0 || !strings.Contains(stdout, "usage: export") {
		t.Errorf("-help: exit %d, %q", code, stdout)
	}
}

// A checkpoint of a run with train -ema exports its average by default and its raw
// parameters with -params raw: the exported values sum to the sum of each (the layouts
// permute the values, the sum does not see it).
func TestExportParams(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 256)
	ckpt := clitest.AveragedCheckpoint(t, dir, models.LogisticRegression(), train, 0.8, nn.WithDType(nn.Float64))
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(v []float64) (s float64) {
		for _, x := range v {
			s += x
		}
		return s
	}
	for _, tc := range []struct {
		which string
		want  float64
	}{{"averaged", sum(c.EMAParams)}, {"raw", sum(c.Params)}} {
		out := filepath.Join(dir, tc.which+".safetensors")
		code, stdout, stderr := runExport("-checkpoint", ckpt, "-o", out, "-params", tc.which)
		if code != 0 {
			t.Fatalf("-params %s: exit %d: %s", tc.which, code, stderr)
		}
		if !strings.Contains(stdout, tc.which) {
			t.Errorf("-params %s: stdout does not say which parameters:\n%s", tc.which, stdout)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		f, err := tensorfile.DecodeSafetensors(b)
		if err != nil {
			t.Fatal(err)
		}
		got := 0.0
		for _, tn := range f.Tensors {
			v, err := tn.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			got += sum(v)
		}
		if d := got - tc.want; d > 1e-9 || d < -1e-9 {
			t.Errorf("-params %s: exported values sum to %v, want %v", tc.which, got, tc.want)
		}
	}
	if sum(c.EMAParams) == sum(c.Params) {
		t.Error("average and raw parameters have the same sum; the test shows nothing")
	}
	if code, _, stderr := runExport("-checkpoint", ckpt, "-o", filepath.Join(dir, "x.safetensors"), "-params", "mean"); code != 2 || !strings.Contains(stderr, "-params") {
		t.Errorf("-params mean: exit %d, %q", code, stderr)
	}
}

// -pytorch FILE.py writes the module and, without -o, the parameters beside it as
// FILE.safetensors, which the module names as its default relative to its own folder;
// the printed lines say how to import it. Its usage errors name the flag.
func TestExportPyTorchFlags(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 64)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	module := filepath.Join(dir, "digits.py")
	code, stdout, stderr := runExport("-checkpoint", ckpt, "-pytorch", module)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	params := filepath.Join(dir, "digits.safetensors")
	if _, err := os.Stat(params); err != nil {
		t.Errorf("no parameter file beside the module: %v", err)
	}
	for _, want := range []string{"wrote " + params, "wrote " + module, "import digits\n", "model = digits.load_model()", "x: [N, 1, 28, 28]"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	src, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`PARAMETERS = "digits.safetensors"`, `MODEL = "logreg"`, "INPUT_SHAPE = (1, 28, 28)", "NUM_CLASSES = 10",
		"DTYPE = torch.float32", "nn.Linear(784, 10, bias=True)", "def load_model(path=None):", "def predict_proba(model, x):"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("module lacks %q", want)
		}
	}
	if strings.Contains(string(src), "import safetensors") || strings.Contains(string(src), "torchvision") {
		t.Error("the module imports safetensors or torchvision")
	}
	// -o elsewhere: the module finds it by a relative path; a name Python cannot import
	// is loaded with runpy.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runExport("-checkpoint", ckpt, "-pytorch", filepath.Join(sub, "my-model.py"), "-o", params)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if src, _ := os.ReadFile(filepath.Join(sub, "my-model.py")); !strings.Contains(string(src), `PARAMETERS = "../digits.safetensors"`) {
		t.Errorf("module with -o in the parent folder: no relative PARAMETERS")
	}
	if !strings.Contains(stdout, `runpy.run_path("my-model.py")`) {
		t.Errorf("stdout for my-model.py:\n%s", stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", ckpt, "-pytorch", filepath.Join(dir, "m.txt")}, "-pytorch " + filepath.Join(dir, "m.txt") + ": want a file name ending in .py"},
		{[]string{"-checkpoint", ckpt, "-pytorch", module, "-o", module}, "name the same file"},
		{[]string{"-checkpoint", ckpt, "-pytorch", filepath.Join(dir, "no", "m.py")}, "-pytorch " + filepath.Join(dir, "no", "m.py") + ": directory"},
	} {
		code, _, stderr := runExport(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
