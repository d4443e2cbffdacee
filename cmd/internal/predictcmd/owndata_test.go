package predictcmd

import (
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

func flat() nn.Spec {
	return nn.Spec{Name: "flat", Layers: []layers.Layer{layers.Flatten{}, layers.Dense{Units: 1}}}
}

// loaderLogits is the model of ckpt applied to every example of ds, as the training
// loader made them.
func loaderLogits(t *testing.T, ckpt string, ds datasets.Dataset) [][]float64 {
	t.Helper()
	p, err := nn.LoadPredictor(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	L, K := p.ExampleLen(), p.NumClasses()
	x := make([]float32, ds.Len()*L)
	for i := range ds.Len() {
		ds.Example(i, x[i*L:(i+1)*L])
	}
	z := make([]float64, ds.Len()*K)
	if err := p.Logits(x, z); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, ds.Len())
	for i := range out {
		out[i] = z[i*K : (i+1)*K]
	}
	return out
}

// sameLogits checks predict's lines against the loader's logits, exactly (the same
// float32 inputs through the same model).
func sameLogits(t *testing.T, what string, got []line, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, want %d", what, len(got), len(want))
	}
	for i, l := range got {
		if !slices.Equal(l.Logits, want[i]) || l.Class != nn.Argmax(want[i]) {
			t.Errorf("%s: %s: class %d logits %v; the model on the training loader's example: %v", what, l.Input, l.Class, l.Logits, want[i])
		}
		checkProbabilities(t, l.Probabilities, l.Logits, l.Class)
	}
}

// TestPredictCSVModel: for a model trained on csv:PATH, predict reads the same file
// (header, label column "kind" in the middle, values outside the declared ranges) with
// the run's -scale ranges and gives the logits of the model on the training loader's
// scaled rows; a file without the label column gives the same; -scale is refused.
func TestPredictCSVModel(t *testing.T) {
	dir := t.TempDir()
	path := clitest.TableCSV(t, dir, 60)
	own := cli.DataFlags{Label: "kind", Header: "auto", Scale: "0:10,0:10,-2:12", TestFraction: 0.3, SplitSeed: 7, Labels: "fine"}
	ckpt, _, _ := clitest.OwnData(t, dir, flat(), "csv:"+path, "", own)
	ranges, _ := datasets.ParseRanges(own.Scale)
	table, err := datasets.LoadCSV(path, datasets.CSVOptions{Label: "kind", Ranges: ranges})
	if err != nil {
		t.Fatal(err)
	}
	if table.Clipped == 0 {
		t.Fatal("no value outside the ranges: the test does not check the clipping")
	}
	want := loaderLogits(t, ckpt, table)

	code, stdout, stderr := runPredict("-checkpoint", ckpt, "-json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameLogits(t, "with labels", parseLines(t, stdout), want)
	for _, l := range parseLines(t, stdout) {
		if want := []string{"a", "b", "c"}; l.Label != want[l.Class] { // the "kind" column's values, in text order
			t.Errorf("%s: class %d label %q, want %q", l.Input, l.Class, l.Label, want[l.Class])
		}
	}

	// The same rows without the label column (new data has no labels).
	b, _ := os.ReadFile(path)
	var unlabelled strings.Builder
	for _, row := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(row, ",")
		unlabelled.WriteString(strings.Join(append(f[:2:2], f[3]), ",") + "\n")
	}
	newPath := filepath.Join(dir, "new.csv")
	os.WriteFile(newPath, []byte(unlabelled.String()), 0o644)
	code, stdout, stderr = runPredict("-checkpoint", ckpt, "-json", newPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sameLogits(t, "without labels", parseLines(t, stdout), want)

	wide := filepath.Join(dir, "wide.csv")
	os.WriteFile(wide, []byte("1,2,3,4,5\n"), 0o644)
	nan := filepath.Join(dir, "nan.csv")
	os.WriteFile(nan, []byte("x1,x2,kind,x3\n1,NaN,a,3\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scale", "255", path}, "trained on csv:" + path + " with -scale 0:10,0:10,-2:12"},
		{[]string{wide}, "row 1 has 5 values; the model (trained on csv:" + path + ") expects 3 feature columns"},
		{[]string{nan}, `line 2 column 2 "x2": missing value "NaN"`},
	} {
		code, _, stderr := runPredict(append([]string{"-checkpoint", ckpt}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestPredictImageFolderModel: for a model trained on images:DIR with -image-size 6x5,
// predict resizes images of any size as training did (the logits of the model on the
// training loader's examples); a model trained without -image-size refuses another size.
func TestPredictImageFolderModel(t *testing.T) {
	dir := t.TempDir()
	root := clitest.ImageFolder(t, dir, 6)
	own := cli.DataFlags{ImageSize: "6x5", Channels: 3, TestFraction: 0.25, SplitSeed: 3, Labels: "fine"}
	ckpt, _, _ := clitest.OwnData(t, dir, flat(), "images:"+root, "", own)
	folder, err := datasets.LoadImageFolder(root, datasets.ImageFolderOptions{Channels: 3, Width: 6, Height: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := loaderLogits(t, ckpt, folder) // dark/000.png … dark/005.png, light/000.png …
	code, stdout, stderr := runPredict("-checkpoint", ckpt, "-json", filepath.Join(root, "dark"), filepath.Join(root, "light"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := parseLines(t, stdout)
	for i, l := range got {
		if rel, _ := filepath.Rel(root, l.Input); filepath.ToSlash(rel) != folder.Files[i] {
			t.Fatalf("line %d is %s, want %s", i, l.Input, folder.Files[i])
		}
	}
	sameLogits(t, "resized", got, want)
	for _, l := range got {
		if want := []string{"dark", "light"}; l.Label != want[l.Class] { // the class folders
			t.Errorf("%s: class %d label %q, want %q", l.Input, l.Class, l.Label, want[l.Class])
		}
	}

	// Without -image-size: training needs one size, and so does predict.
	same := filepath.Join(dir, "same")
	for k, class := range []string{"a", "b"} {
		os.MkdirAll(filepath.Join(same, class), 0o755)
		for i := range 3 {
			img := image.NewGray(image.Rect(0, 0, 4, 4))
			for j := range img.Pix {
				img.Pix[j] = byte(60*k + 10*i + j)
			}
			writePNG(t, filepath.Join(same, class, string(rune('0'+i))+".png"), img)
		}
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	ckpt4, _, _ := clitest.OwnData(t, sub, flat(), "images:"+same, "", cli.DataFlags{TestFraction: 0.34, SplitSeed: 1, Labels: "fine"})
	big := filepath.Join(dir, "big.png")
	writePNG(t, big, image.NewGray(image.Rect(0, 0, 5, 4)))
	code, _, stderr = runPredict("-checkpoint", ckpt4, big)
	if code != 2 || !strings.Contains(stderr, "is 5×4 pixels; the model expects 4×4") || !strings.Contains(stderr, "without -image-size") {
		t.Errorf("5×4 image for a 4×4 model trained without -image-size: exit %d, %q", code, stderr)
	}
	ok := filepath.Join(dir, "ok.png")
	writePNG(t, ok, image.NewRGBA(image.Rect(0, 0, 4, 4)))
	if code, _, stderr = runPredict("-checkpoint", ckpt4, ok); code != 0 {
		t.Errorf("4×4 image: exit %d, %q", code, stderr)
	}
}

// TestPredictCSVCategorical: a model trained on a table with a categorical column (sex,
// declared F, M), missing values (declared for age and sex, with indicators) and a named
// label column in the middle (status) predicts new rows without labels, with missing
// cells, exactly as the model does on the features written out by hand from the
// declarations recorded in its checkpoint: age/100 (missing: 50), its indicator, sex
// one-hot (missing: M), its indicator, weight/200.
func TestPredictCSVCategorical(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("age,sex,status,weight\n")
	for i := range 60 {
		age, sex := fmt.Sprint(20+i), []string{"F", "M"}[i%2]
		if i%7 == 0 {
			age = ""
		}
		if i%11 == 0 {
			sex = "?"
		}
		fmt.Fprintf(&b, "%s,%s,%s,%d\n", age, sex, []string{"healthy", "ill"}[(i/2)%2], 50+i)
	}
	path := filepath.Join(dir, "patients.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	own := cli.DataFlags{Label: "status", Header: "auto", Scale: "0:100,0:200", Categorical: "sex=F,M", Missing: "age=50;sex=M",
		MissingIndicator: true, TestFraction: 0.3, SplitSeed: 7, Labels: "fine"}
	ckpt, _, _ := clitest.OwnData(t, dir, flat(), "csv:"+path, "", own)

	newRows := filepath.Join(dir, "new.csv")
	if err := os.WriteFile(newRows, []byte("age,sex,weight\n,F,70\n30,NA,90\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runPredict("-checkpoint", ckpt, "-json", newRows)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	x := []float32{0.5, 1, 1, 0, 0, 0.35, 0.3, 0, 0, 1, 1, 0.45}
	p, err := nn.LoadPredictor(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if p.ExampleLen() != 6 || p.NumClasses() != 2 {
		t.Fatalf("model of %d features and %d classes, want 6 and 2", p.ExampleLen(), p.NumClasses())
	}
	z := make([]float64, 4)
	if err := p.Logits(x, z); err != nil {
		t.Fatal(err)
	}
	sameLogits(t, "categorical", parseLines(t, stdout), [][]float64{z[:2], z[2:]})
	for _, l := range parseLines(t, stdout) {
		if l.Label != []string{"healthy", "ill"}[l.Class] {
			t.Errorf("%s: class %d label %q", l.Input, l.Class, l.Label)
		}
	}
	// A category that was not declared, and a missing cell of a column without a value.
	if err := os.WriteFile(newRows, []byte("age,sex,weight\n40,X,70\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runPredict("-checkpoint", ckpt, newRows)
	if code != 2 || !strings.Contains(stderr, `line 2 column 2 "sex": "X" is not one of the declared categories (F, M)`) {
		t.Errorf("an undeclared category: exit %d, %q", code, stderr)
	}
	if err := os.WriteFile(newRows, []byte("age,sex,weight\n40,F,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runPredict("-checkpoint", ckpt, newRows)
	if code != 2 || !strings.Contains(stderr, `line 2 column 3 "weight": missing value`) {
		t.Errorf("a missing weight: exit %d, %q", code, stderr)
	}
}
