package traincmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// smallFashion writes n training and m test digits of the embedded sample as IDX files,
// the layout -dataset fashion-mnist -data DIR reads.
func smallFashion(t *testing.T, n, m int) string {
	t.Helper()
	train, test, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := datasets.StratifiedSubset(train, n)
	te, _ := datasets.StratifiedSubset(test, m)
	dir := t.TempDir()
	writeIDX(t, dir, mnist.TrainImages, mnist.TrainLabels, tr)
	writeIDX(t, dir, mnist.TestImages, mnist.TestLabels, te)
	return dir
}

// TestScatterModels trains -model scatter-linear and scatter-cnn for a few steps on 28×28
// images: each picks the 1×28×28 variant, computes the features once (the progress line
// counts train + test images), and takes T&B's defaults (clip 0.1, DP-SGD with momentum
// 0.9) unless a flag says otherwise.
func TestScatterModels(t *testing.T) {
	dir := smallFashion(t, 60, 20)
	for _, tc := range []struct{ name, spec string }{
		{"scatter-linear", "scatter-linear-mnist"},
		{"scatter-cnn", "scatter-cnn-mnist-tanh"},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), "-model", tc.name, "-dataset", "fashion-mnist", "-data", dir, "-batch", "20", "-epochs", "1", "-json")
		if code != exit.OK {
			t.Fatalf("-model %s: exit %d\n%s", tc.name, code, stderr)
		}
		s := decodeSummary(t, stdout)
		if s["model"] != tc.spec || s["clip"].(float64) != 0.1 || s["learning_rate"].(float64) != 2 || s["steps"].(float64) != 3 {
			t.Errorf("-model %s: %v", tc.name, s)
		}
		if !strings.Contains(s["optimizer"].(string), "momentum") {
			t.Errorf("-model %s: optimizer %v, want DP-SGD with momentum", tc.name, s["optimizer"])
		}
		if !strings.Contains(stderr, "computing scattering features… 80 images") {
			t.Errorf("-model %s: no progress line for the features:\n%s", tc.name, stderr)
		}
	}
	// Flags win over the model's defaults; another optimizer keeps its own learning rate.
	s := decodeSummary(t, mustRun(t, "-model", "scatter-linear", "-dataset", "fashion-mnist", "-data", dir, "-batch", "20", "-epochs", "1", "-clip", "0.5", "-lr", "1", "-json"))
	if s["clip"].(float64) != 0.5 || s["learning_rate"].(float64) != 1 {
		t.Errorf("-clip 0.5 -lr 1: %v", s)
	}
	s = decodeSummary(t, mustRun(t, "-model", "scatter-linear", "-dataset", "fashion-mnist", "-data", dir, "-batch", "20", "-epochs", "1", "-optimizer", "dp-adam", "-json"))
	if s["clip"].(float64) != 0.1 || s["learning_rate"].(float64) != lookupOptimizer("dp-adam").lr {
		t.Errorf("-optimizer dp-adam: %v", s)
	}
	// Images of another size are a usage error naming the sizes the models take.
	code, _, stderr := runCmd(t, context.Background(), "-model", "scatter-cnn", "-dataset", "images:"+writeDigitFolder(t, 2, 16))
	if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "C×28×28 or C×32×32") {
		t.Errorf("scatter-cnn on 16×16 images: exit %d, %q", code, stderr)
	}
}

// TestScatterCIFAR: on 3×32×32 images the scatter models pick their CIFAR variants.
func TestScatterCIFAR(t *testing.T) {
	if testing.Short() {
		t.Skip("scatters 48 colour images per model")
	}
	dir := t.TempDir()
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		var b []byte
		for i := range 8 {
			r := make([]byte, 3073)
			r[0] = byte(i % 10)
			for j := 1; j < len(r); j++ {
				r[j] = byte(i * j)
			}
			b = append(b, r...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for model, want := range map[string]string{"scatter-linear": "scatter-linear-cifar10", "scatter-cnn": "scatter-cnn-cifar10-tanh"} {
		s := decodeSummary(t, mustRun(t, "-model", model, "-dataset", "cifar10", "-data", dir, "-batch", "20", "-epochs", "1", "-json"))
		if s["model"] != want || s["train_examples"].(float64) != 40 {
			t.Errorf("-model %s on cifar10: %v", model, s)
		}
	}
}

// TestHelpListsModels: -help names every -model with its parameter count for the shapes
// it lists, as nn.New counts the parameters of the model that -model builds.
func TestHelpListsModels(t *testing.T) {
	code, stdout, _ := runCmd(t, context.Background(), "-help")
	if code != exit.OK {
		t.Fatalf("-help: exit %d", code)
	}
	section := stdout[strings.Index(stdout, "\nModels"):]
	for _, info := range modelTable {
		i := strings.Index(section, "\n  "+info.name+" ")
		if i < 0 {
			t.Errorf("-help does not list -model %s", info.name)
			continue
		}
		entry := section[i+1:]
		// The entry ends where the next model's line starts.
		for _, next := range modelTable {
			if j := strings.Index(entry, "\n  "+next.name+" "); j >= 0 {
				entry = entry[:j]
			}
		}
		for _, shape := range info.shapes {
			o := &options{model: info.name, activation: defaultActivation, own: ownDataFlags{hidden: defaultHidden}}
			spec, err := modelSpec(o, shape, 10)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := spec.Layers[0].(layers.Whitened); ok {
				// Its map (minutes: an eigen-decomposition of 3,969 × 3,969, whatever the
				// prior's size) has no parameters and keeps the base's output shape, so
				// the base alone gives the network the same parameters.
				if out, err := w.OutputShape(shape); err != nil || len(out) != 1 {
					t.Fatalf("%s: whitened output %v, %v", info.name, out, err)
				}
				spec.Layers = append(slices.Clone(w.Base), spec.Layers[1:]...)
			}
			m, err := nn.New(spec, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := cli.Shape(shape) + ": " + cli.Thousands(m.NumParams())
			if !strings.Contains(entry, want) {
				t.Errorf("-help entry of %s lacks %q:\n%s", info.name, want, entry)
			}
		}
	}
	for _, name := range []string{"scatter-linear", "scatter-cnn"} {
		if !strings.Contains(stdout, name) {
			t.Errorf("-help does not name %s", name)
		}
	}
}
