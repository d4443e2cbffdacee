package export_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/nn"
)

// TestCheckExportScript runs scripts/check_export.py on exports of exportSpec and
// exportNormSpec (every exportable layer kind): its PyTorch backend builds the exported
// Sequential source in PyTorch and loads the tensors strictly, its pure-Python backend
// computes PyTorch's semantics from the stored architecture; both must reproduce our
// float64 logits to 1e-9. It needs python3 (and PyTorch for the torch backend) and skips
// without them, or with -short.
func TestCheckExportScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs python3")
	}
	// The python3 on PATH, or Debian's, whichever has PyTorch (python3-torch).
	var python string
	backends := []string{"python"}
	for _, name := range []string{"python3", "/usr/bin/python3"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if python == "" {
			python = p
		}
		if exec.Command(p, "-c", "import torch").Run() == nil {
			python, backends = p, []string{"python", "torch"}
			break
		}
	}
	if python == "" {
		t.Skip("no python3")
	}
	if len(backends) == 1 {
		t.Log("PyTorch not installed: checking the pure-Python backend only")
	}
	script, err := filepath.Abs("../scripts/check_export.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []nn.Spec{exportSpec(), exportNormSpec()} {
		const n = 4
		m := newModel(t, spec, n, nn.WithDType(nn.Float64), nn.WithSeed(1))
		randomParams(t, m, 5)
		dir := t.TempDir()
		file := filepath.Join(dir, "m.safetensors")
		if err := export.TorchFile(file, m); err != nil {
			t.Fatal(err)
		}
		x := randomInput(m, n, 2)
		logits := logitsOf(t, m, x)
		size := len(x) / n
		var csv, preds strings.Builder
		for i := range n {
			row := make([]string, size)
			for j, v := range x[i*size : (i+1)*size] {
				row[j] = strconv.FormatFloat(float64(v), 'g', -1, 32)
			}
			fmt.Fprintln(&csv, strings.Join(row, ","))
			z := logits[i*m.NumClasses() : (i+1)*m.NumClasses()]
			top, sum := slices.Max(z), 0.0
			probs := make([]float64, len(z))
			for k, v := range z {
				probs[k] = math.Exp(v - top)
				sum += probs[k]
			}
			for k := range probs {
				probs[k] /= sum
			}
			line, _ := json.Marshal(map[string]any{"input": filepath.Join(dir, "x.csv") + ":" + strconv.Itoa(i),
				"logits": z, "probabilities": probs, "class": slices.Index(z, top)})
			fmt.Fprintln(&preds, string(line))
		}
		if err := os.WriteFile(filepath.Join(dir, "x.csv"), []byte(csv.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pred.jsonl"), []byte(preds.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, backend := range backends {
			out, err := exec.Command(python, script, "--backend", backend, "--tol", "1e-9", file, filepath.Join(dir, "pred.jsonl")).CombinedOutput()
			if err != nil {
				t.Errorf("%s, %s backend: %v\n%s", spec.Name, backend, err, out)
				continue
			}
			t.Logf("%s: %s", spec.Name, strings.TrimSpace(string(out)))
		}
	}
}
