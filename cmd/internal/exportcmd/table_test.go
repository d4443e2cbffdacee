package exportcmd

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// encodeRows is the Python side of TestPyTorchTableEncoding: it loads the exported module
// (argv[1]), encodes the rows of argv[2] (a JSON list of lists of cells) with encode_rows
// and prints predict_proba's probabilities as JSON; then it checks that a category the
// table does not declare is refused with a ValueError.
const encodeRows = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
model = m.load_model()
rows = json.load(open(sys.argv[2]))
print(json.dumps(m.predict_proba(model, m.encode_rows(rows)).tolist()))
try:
    m.encode_rows([["40", "X", "no", "70"]])
except ValueError as err:
    if "categories" not in str(err):
        sys.exit("wrong error: %s" % err)
else:
    sys.exit("an undeclared category was encoded")
`

// TestPyTorchTableEncoding: a model trained on a CSV table with categorical columns,
// missing values with indicators and a named label exports a module whose encode_rows
// turns raw rows (missing cells included) into the input the model gets from predict's
// reading of the same rows: the probabilities agree to 1e-6.
func TestPyTorchTableEncoding(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PyTorch")
	}
	if out, err := exec.Command(python, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		t.Skipf("%s has no torch and numpy (Debian: apt install python3-torch): %v %s", python, err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("age,sex,smoker,weight,status\n")
	for i := range 80 {
		age, smoker := fmt.Sprint(20+i%60), []string{"no", "yes"}[(i/3)%2]
		if i%9 == 4 {
			age = "NA"
		}
		if i%7 == 2 {
			smoker = ""
		}
		fmt.Fprintf(&b, "%s,%s,%s,%d,%s\n", age, []string{"F", "M"}[i%2], smoker, 40+2*i, []string{"healthy", "ill"}[(i/4)%2])
	}
	path := filepath.Join(dir, "visits.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	own := cli.DataFlags{Label: "status", Header: "auto", Scale: "0:100,0:250", Categorical: "sex=F,M;smoker=no,yes", Missing: "age=50;smoker=no",
		MissingIndicator: true, TestFraction: 0.25, SplitSeed: 3, Labels: "fine"}
	spec := nn.Spec{Name: "mlp", Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 8}, layers.Tanh{}, layers.Dense{Units: 1}}}
	ckpt, _, _ := clitest.OwnData(t, dir, spec, "csv:"+path, "", own)
	module := filepath.Join(dir, "model.py")
	if code, _, stderr := runExport("-checkpoint", ckpt, "-pytorch", module, "-q"); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	rows := [][]string{{"30", "F", "yes", "100"}, {"", "M", "NA", "200"}, {"90", "F", "no", "60"}, {"?", "M", "", "300"}}
	var csv strings.Builder
	csv.WriteString("age,sex,smoker,weight\n")
	for _, r := range rows {
		csv.WriteString(strings.Join(r, ",") + "\n")
	}
	opts, err := own.CSVOptions()
	if err != nil {
		t.Fatal(err)
	}
	opts.Label, opts.Unlabelled = "", true
	table, err := datasets.ReadCSV(strings.NewReader(csv.String()), opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := nn.LoadPredictor(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	L, K := p.ExampleLen(), p.NumClasses()
	x := make([]float32, len(rows)*L)
	for i := range rows {
		table.Example(i, x[i*L:(i+1)*L])
	}
	want := make([]float64, len(rows)*K)
	if err := p.Probabilities(x, want); err != nil {
		t.Fatal(err)
	}
	rowsFile := filepath.Join(dir, "rows.json")
	jb, _ := json.Marshal(rows)
	if err := os.WriteFile(rowsFile, jb, 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "encode.py")
	if err := os.WriteFile(script, []byte(encodeRows), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, script, module, rowsFile).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	var got [][]float64
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python printed %q: %v", out, err)
	}
	for i := range rows {
		for k := range K {
			if d := math.Abs(got[i][k] - want[i*K+k]); !(d <= 1e-6) {
				t.Errorf("row %d class %d: PyTorch %v, predict %v", i, k, got[i][k], want[i*K+k])
			}
		}
	}
}
