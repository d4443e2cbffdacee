package traincmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// exampleModel is the residual CNN of examples/models, a network none of the built-in
// models is.
const exampleModel = "../../../examples/models/small-res-cnn.json"

// TestModelFile trains the example residual CNN written as JSON, stops after one epoch,
// resumes to the end with "-resume" alone and compares the parameters bit for bit with
// an uninterrupted run; the checkpoint rebuilds the network from its stored architecture,
// which is the file's; an edited file is refused on resume.
func TestModelFile(t *testing.T) {
	data := smallFashion(t, 120, 30)
	dir := t.TempDir()
	model := filepath.Join(dir, "net.json")
	copyFile(t, exampleModel, model)
	whole, part := filepath.Join(dir, "whole.ckpt"), filepath.Join(dir, "part.ckpt")
	common := []string{"-model", model, "-dataset", "fashion-mnist", "-data", data, "-seed", "3", "-noise", "1.1", "-batch", "40"}
	s := decodeSummary(t, mustRun(t, append(common, "-epochs", "2", "-checkpoint", whole, "-json")...))
	if s["model"] != "net" {
		t.Errorf("summary's model %v, want the file's name, net", s["model"])
	}
	mustRun(t, append(common, "-epochs", "1", "-checkpoint", part)...)
	mustRun(t, "-resume", part, "-data", data, "-epochs", "2", "-checkpoint", part)
	sameCheckpointParams(t, "parameter", part, whole)

	c, err := checkpoint.Load(whole)
	if err != nil {
		t.Fatal(err)
	}
	var file nn.Architecture
	b, _ := os.ReadFile(model)
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	file.InputShape, file.NumClasses = []int{1, 28, 28}, 10
	spec, err := nn.SpecOf(&file, "net")
	if err != nil {
		t.Fatal(err)
	}
	want, err := nn.ArchitectureOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	if c.Architecture == nil || c.Architecture.String() != want.String() {
		t.Errorf("checkpoint's architecture\n%v\nwant the file's\n%v", c.Architecture, want)
	}
	if _, err := nn.LoadPredictor(whole); err != nil {
		t.Errorf("predictor from the checkpoint: %v", err)
	}

	// The same layers with other group counts: same parameters, another network.
	edited := strings.ReplaceAll(string(b), `"groups": 4`, `"groups": 8`)
	if err := os.WriteFile(model, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, context.Background(), "-resume", part, "-data", data, "-epochs", "3", "-checkpoint", part)
	if code != exit.Usage || !strings.Contains(stderr, settingModelFile) {
		t.Errorf("resuming with an edited -model file: exit %d, %q", code, stderr)
	}
}

// TestModelFileReadOnce: a run reads -model FILE.json once; a file edited between two
// uses (plan, model, checkpoint) changes neither the network nor the recorded SHA-256,
// which stays that of the bytes first read (computed here with crypto/sha256).
func TestModelFileReadOnce(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "net.json")
	copyFile(t, exampleModel, model)
	orig, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	o := &options{model: model, dataset: "fashion-mnist"}
	first, err := modelFileSpec(o, []int{1, 28, 28}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model, []byte(`{"layers": [{"type": "flatten"}, {"type": "dense", "units": 10}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := modelFileSpec(o, []int{1, 28, 28}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Layers) != len(first.Layers) || len(first.Layers) <= 2 {
		t.Errorf("second use has %d layers, first %d: the edited file was read again", len(again.Layers), len(first.Layers))
	}
	if sum := sha256.Sum256(orig); o.modelFileSum != hex.EncodeToString(sum[:]) {
		t.Errorf("recorded SHA-256 %s, want the first bytes' %x", o.modelFileSum, sum)
	}
}

// TestModelFileErrors: a file that does not describe a network for the data gets a usage
// error naming the file and what is wrong: the layer (index and type) and the field.
func TestModelFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"unknown-field", `{"layers":[{"type":"conv","settings":{"filter":8,"kernel":[3,3]}},{"type":"flatten"},{"type":"dense","settings":{"units":10}}]}`,
			[]string{"layer 0 (conv)", `"filter"`}},
		{"wrong-type", `{"layers":[{"type":"flatten"},{"type":"dense","settings":{"units":"10"}}]}`,
			[]string{"layer 1 (dense)", "units"}},
		{"unknown-layer", `{"layers":[{"type":"convolution"}]}`, []string{"layer 0", `"convolution"`}},
		{"shape", `{"layers":[{"type":"conv","settings":{"filters":4,"kernel":[3,3]}},{"type":"dense","settings":{"units":10}}]}`,
			[]string{"layer 1", "Flatten"}},
		{"input-shape", `{"input_shape":[3,32,32],"layers":[{"type":"flatten"},{"type":"dense","settings":{"units":10}}]}`,
			[]string{"input_shape [3 32 32]", "1×28×28"}},
		{"classes", `{"num_classes":4,"layers":[{"type":"flatten"},{"type":"dense","settings":{"units":4}}]}`,
			[]string{"num_classes 4", "10 classes"}},
		{"outputs", `{"layers":[{"type":"flatten"},{"type":"dense","settings":{"units":7}}]}`, []string{"gives 7 values, want 10 logits"}},
		{"not-json", `layers: conv`, []string{"invalid character"}},
		{"trailing", `{"layers":[{"type":"flatten"},{"type":"dense","settings":{"units":10}}]} {}`, []string{"after"}},
		{"huge", `{"layers":[` + strings.Repeat(`{"type":"relu"},`, maxModelFile/15) + `{"type":"relu"}]}`, []string{"model file"}},
	} {
		path := filepath.Join(dir, tc.name+".json")
		if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCmd(t, context.Background(), "-model", path, "-epochs", "1")
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-model "+path+":") {
			t.Errorf("%s: exit %d, %q; want a one-line usage error naming the file", tc.name, code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: %q does not say %q", tc.name, stderr, w)
			}
		}
	}
	code, _, stderr := runCmd(t, context.Background(), "-model", filepath.Join(dir, "missing.json"))
	if code != exit.Usage || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}
}

// TestPrintModel: -print-model writes every built-in model that takes MNIST's digits as
// JSON that, given back as -model FILE.json, is the same network (the same architecture
// record as the built-in model's).
func TestPrintModel(t *testing.T) {
	dir := t.TempDir()
	for _, info := range modelTable {
		if info.shapes[0][1] != 28 {
			continue
		}
		out := mustRun(t, "-model", info.name, "-print-model")
		path := filepath.Join(dir, info.name+".json")
		if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		o := &options{model: info.name, activation: defaultActivation, own: ownDataFlags{hidden: defaultHidden}, dataset: "mnist"}
		builtin, err := modelSpec(o, []int{1, 28, 28}, 10)
		if err != nil {
			t.Fatal(err)
		}
		o.model = path
		fromFile, err := modelSpec(o, []int{1, 28, 28}, 10)
		if err != nil {
			t.Fatalf("%s: the printed file: %v\n%s", info.name, err, out)
		}
		a, _ := nn.ArchitectureOf(builtin)
		b, _ := nn.ArchitectureOf(fromFile)
		if a.String() != b.String() {
			t.Errorf("%s: printed and read back\n%v\nwant\n%v", info.name, b, a)
		}
	}
}

// TestModelFileDocs: docs/models.md documents every layer type the registry stores.
func TestModelFileDocs(t *testing.T) {
	b, err := os.ReadFile("../../../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range layers.Codecs() {
		if !strings.Contains(string(b), "`"+c.Kind+"`") {
			t.Errorf("docs/models.md does not document layer type %q", c.Kind)
		}
	}
}

// TestConfigFile: -config gives flags, the command line wins over it and it over -recipe;
// the checkpoint records the run's settings, which a resume without -config takes over.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "run.conf")
	if err := os.WriteFile(config, []byte("# logistic regression, one epoch\nmodel = logreg\nepochs = 1\nlr = 0.5\nbatch = 500\nclip = 0.7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	s := decodeSummary(t, mustRun(t, "-config", config, "-lr", "2", "-checkpoint", ckpt, "-json"))
	if s["model"] != "logreg" || s["learning_rate"].(float64) != 2 || s["clip"].(float64) != 0.7 || s["steps"].(float64) != 16 {
		t.Errorf("summary %v; want logreg, lr 2 (the command line's), clip 0.7, 16 steps (1 epoch of batch 500)", s)
	}
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings["lr"] != "2" || c.Settings["clip"] != "0.7" || c.Settings["model"] != "logreg" || c.Settings["batch"] != "500" {
		t.Errorf("checkpoint settings %v", c.Settings)
	}
	// A resume without -config takes the run's settings from the checkpoint.
	s = decodeSummary(t, mustRun(t, "-resume", ckpt, "-json"))
	if s["learning_rate"].(float64) != 2 || s["clip"].(float64) != 0.7 {
		t.Errorf("resumed summary %v", s)
	}
	// Over a recipe: the file's -epochs wins over the recipe's.
	if err := os.WriteFile(config, []byte("recipe = mnist-cnn\nepochs = 1\nbatch = 1000\nphysical-batch = 500\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = decodeSummary(t, mustRun(t, "-config", config, "-model", "logreg", "-json"))
	if s["steps"].(float64) != 8 {
		t.Errorf("-config with a recipe: %v steps, want 8 (1 epoch of batch 1000)", s["steps"])
	}
	code, _, stderr := runCmd(t, context.Background(), "-config", filepath.Join(dir, "none.conf"))
	if code != exit.Usage || !strings.Contains(stderr, "none.conf") {
		t.Errorf("missing -config: exit %d, %q", code, stderr)
	}
}

// TestPrepareOnly: -prepare-only reads no data and spends nothing: a model without a
// prior has nothing to prepare (exit 0, no summary), and a data set whose shape is known
// only from its data is refused with the way out.
func TestPrepareOnly(t *testing.T) {
	store := t.TempDir()
	code, stdout, stderr := runCmd(t, context.Background(), "-prepare-only", "-budget-store", store)
	if code != exit.OK || stdout != "" || !strings.Contains(stderr, "-model cnn sees no prior: nothing to prepare") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("the budget store holds %d entries after -prepare-only", len(entries))
	}
	code, _, stderr = runCmd(t, context.Background(), "-prepare-only", "-dataset", "csv:x.csv", "-scale", "0:1")
	if code != exit.Usage || !strings.Contains(stderr, "known only from its data") {
		t.Errorf("own data: exit %d, %q", code, stderr)
	}
}
