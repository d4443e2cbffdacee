package export_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/nn"
)

// TestClassNames: the class names of WithClassNames are the Python module's CLASSES, in
// class order beside NUM_CLASSES, and the safetensors metadata's "privtrain.classes" (a
// JSON list), read by an independent parser and, where Debian's python3-torch is there,
// by Python importing the module and its read_safetensors; names with quotes,
// backslashes and non-ASCII letters come through unchanged. Without names the classes
// are numbered; a wrong count or a bad name is an error.
func TestClassNames(t *testing.T) {
	m, err := nn.New(exportSpec(), 1, nn.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"Ankle boot", `say "hi" \ back`, "Été 🌞"}
	dir := t.TempDir()
	st, py := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "m.py")
	if err := export.TorchFile(st, m, export.WithClassNames(names)); err != nil {
		t.Fatal(err)
	}
	if err := export.PyTorchFile(py, m, "m", "m.safetensors", export.WithClassNames(names)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	_, md := parseSafetensors(t, b)
	var got []string
	if err := json.Unmarshal([]byte(md["privtrain.classes"]), &got); err != nil || !slices.Equal(got, names) {
		t.Errorf("metadata privtrain.classes = %q (%v); want %q", md["privtrain.classes"], err, names)
	}
	src, err := os.ReadFile(py)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("NUM_CLASSES = 3\n")) || !bytes.Contains(src, []byte("\nCLASSES = [")) {
		t.Errorf("module lacks NUM_CLASSES = 3 and CLASSES:\n%s", src)
	}

	const python = "/usr/bin/python3"
	if !testing.Short() && exec.Command(python, "-c", "import torch, numpy").Run() == nil {
		script := `import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
_, metadata = mod.read_safetensors(sys.argv[2])
print(json.dumps([mod.CLASSES, json.loads(metadata["privtrain.classes"]), mod.NUM_CLASSES]))
`
		out, err := exec.Command(python, "-c", script, py, st).Output()
		if err != nil {
			t.Fatalf("python: %v\n%s", err, out)
		}
		var r []json.RawMessage
		var classes, meta []string
		var k int
		if err := json.Unmarshal(out, &r); err != nil || len(r) != 3 || json.Unmarshal(r[0], &classes) != nil || json.Unmarshal(r[1], &meta) != nil || json.Unmarshal(r[2], &k) != nil {
			t.Fatalf("python printed %s (%v)", out, err)
		}
		if !slices.Equal(classes, names) || !slices.Equal(meta, names) || k != len(names) {
			t.Errorf("in Python: CLASSES %q, metadata %q, NUM_CLASSES %d; want %q", classes, meta, k, names)
		}
	} else {
		t.Log("-short, or no /usr/bin/python3 with torch and numpy: CLASSES checked in the source only")
	}

	// No names: the class numbers.
	var buf bytes.Buffer
	if err := export.PyTorch(&buf, m, "m", ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\nCLASSES = [\"0\", \"1\", \"2\"]\n") {
		t.Errorf("module without names lacks CLASSES = [\"0\", \"1\", \"2\"]")
	}
	buf.Reset()
	if err := export.Torch(&buf, m); err != nil {
		t.Fatal(err)
	}
	if _, md := parseSafetensors(t, buf.Bytes()); md["privtrain.classes"] != `["0","1","2"]` {
		t.Errorf("metadata without names: privtrain.classes = %q", md["privtrain.classes"])
	}
	for _, bad := range [][]string{{"a", "b"}, {"a", "b\nc", "d"}, {"a", "", "c"}} {
		if err := export.Torch(&buf, m, export.WithClassNames(bad)); err == nil {
			t.Errorf("names %q accepted", bad)
		}
		if err := export.PyTorch(&buf, m, "m", "", export.WithClassNames(bad)); err == nil {
			t.Errorf("names %q accepted by PyTorch", bad)
		}
	}
}
