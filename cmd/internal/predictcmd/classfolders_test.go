package predictcmd

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/models"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../../.."

// exampleDigit matches the example images shipped in examples/digits: the class folder
// and the index of the embedded MNIST test digit the image is.
var exampleDigit = regexp.MustCompile(`examples/digits/(\d)/test-(\d{4})\.png$`)

// TestExampleDigitsAreTheEmbeddedTestDigits: every image under examples/digits is the
// embedded MNIST test digit its name says (pixel for pixel), in the folder of its label,
// so that predict's accuracy on them is a held-out accuracy.
func TestExampleDigitsAreTheEmbeddedTestDigits(t *testing.T) {
	_, test, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "examples/digits/*/*"))
	if err != nil || len(files) < 10 {
		t.Fatalf("examples/digits holds %d files (%v); want at least one image per digit", len(files), err)
	}
	x := make([]float32, 784)
	classes := map[string]bool{}
	for _, f := range files {
		m := exampleDigit.FindStringSubmatch(filepath.ToSlash(f))
		if m == nil {
			t.Errorf("%s: not named examples/digits/<digit>/test-NNNN.png", f)
			continue
		}
		classes[m[1]] = true
		i, _ := strconv.Atoi(m[2])
		label := test.Example(i, x)
		if strconv.Itoa(label) != m[1] {
			t.Errorf("%s: test digit %d is a %d", f, i, label)
		}
		img, err := datasets.DecodeImageFile(f, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range x {
			r, g, b, _ := img.At(j%28, j/28).RGBA()
			if want := uint32(math.Round(float64(v) * 255)); r>>8 != want || g != r || b != r {
				t.Fatalf("%s: pixel %d is %d, the test digit's %d", f, j, r>>8, want)
			}
		}
	}
	if len(classes) != 10 {
		t.Errorf("examples/digits has folders for %d digits; want all 10", len(classes))
	}
}

// readmePredict returns the arguments of the first "privtrain predict" command of a
// fenced block of the Markdown file path (after "predict", before a "#" comment).
func readmePredict(t *testing.T, path, prefix string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if cmd, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			cmd, _, _ = strings.Cut(cmd, "#")
			return strings.Fields(cmd)
		}
	}
	t.Fatalf("%s: no line starting %q", path, prefix)
	return nil
}

// TestREADMEPredictRunsAsWritten runs the predict line of the README and of
// docs/checkpoints.md, with the checkpoint of a model trained here for m.ckpt and the
// paths from the repository's root: the class folders of examples/digits are read (each
// image's folder is its true class), the logits are the model's on those test digits,
// and the accuracy line counts the predictions that match the folder.
func TestREADMEPredictRunsAsWritten(t *testing.T) {
	dir := t.TempDir()
	train, test := clitest.MNIST(t, 256)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	want := referenceLogits(t, ckpt, test, 100) // the shipped digits are among the first 100
	for _, doc := range []struct{ path, prefix string }{
		{"README.md", "privtrain predict "},
		{"docs/checkpoints.md", "go run ./cmd/predict "},
	} {
		args := readmePredict(t, filepath.Join(repoRoot, doc.path), doc.prefix)
		for i, a := range args {
			switch {
			case a == "m.ckpt":
				args[i] = ckpt
			case !strings.HasPrefix(a, "-"):
				args[i] = filepath.Join(repoRoot, a)
			}
		}
		code, stdout, stderr := runPredict(args...)
		if code != 0 {
			t.Fatalf("%s: predict %v: exit %d, %s", doc.path, args, code, stderr)
		}
		rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rows[0][:4], []string{"input", "class", "label", "true_label"}) {
			t.Fatalf("%s: header %v", doc.path, rows[0])
		}
		correct, counted := 0, 0
		for _, r := range rows[1:] {
			m := exampleDigit.FindStringSubmatch(filepath.ToSlash(r[0]))
			if m == nil {
				t.Fatalf("%s: input %s is not an example digit", doc.path, r[0])
			}
			i, _ := strconv.Atoi(m[2])
			class := slices.Index(want[i], slices.Max(want[i]))
			if r[1] != strconv.Itoa(class) || r[2] != strconv.Itoa(class) {
				t.Errorf("%s: %s predicted %s (%s); the model's class is %d", doc.path, r[0], r[1], r[2], class)
			}
			if r[3] != "" {
				if r[3] != m[1] {
					t.Errorf("%s: %s: true_label %q, its folder is %s", doc.path, r[0], r[3], m[1])
				}
				counted++
				if r[3] == strconv.Itoa(class) {
					correct++
				}
			}
		}
		if counted < 10 {
			t.Fatalf("%s: %d images from class folders; want the examples/digits folders read", doc.path, counted)
		}
		line := fmt.Sprintf("predict: accuracy %.2f%% (%d of %d images correct; the true class is each image's folder)\n", 100*float64(correct)/float64(counted), correct, counted)
		if stderr != line {
			t.Errorf("%s: stderr %q; want %q", doc.path, stderr, line)
		}
	}
}

// TestPredictClassFolders: a directory of class folders is read as training reads
// images:DIR, skipping files that are not images; a folder that names no class of the
// model is shown but not counted, with a warning; -json carries true_label; a flat
// directory keeps its output without the column.
func TestPredictClassFolders(t *testing.T) {
	dir := t.TempDir()
	train, test := clitest.MNIST(t, 128)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	want := referenceLogits(t, ckpt, test, 6)
	root := filepath.Join(dir, "folders")
	x := make([]float32, 784)
	var labels []int
	for i := range 6 {
		label := test.Example(i, x)
		labels = append(labels, label)
		class := strconv.Itoa(label)
		if i == 5 {
			class = "unknown"
		}
		os.MkdirAll(filepath.Join(root, class), 0o755)
		writeGray(t, filepath.Join(root, class, fmt.Sprintf("%d.png", i)), x)
		writeFile(t, filepath.Join(root, class, "README.txt"), "not an image")
	}
	code, stdout, stderr := runPredict("-checkpoint", ckpt, "-json", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := map[string]string{}
	correct := 0
	for _, l := range parseLines(t, stdout) {
		i, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(l.Input), ".png"))
		got[l.Input] = l.TrueLabel
		wantTruth := strconv.Itoa(labels[i])
		if i == 5 {
			wantTruth = "unknown"
		} else if l.Class == labels[i] {
			correct++
		}
		if l.TrueLabel != wantTruth {
			t.Errorf("%s: true_label %q; want %q", l.Input, l.TrueLabel, wantTruth)
		}
		sameLogits(t, l.Input, []line{l}, [][]float64{want[i]})
	}
	if len(got) != 6 {
		t.Errorf("%d predictions; want the 6 images", len(got))
	}
	wantErr := "predict: warning: class folders unknown name no class of the model (0, 1, 2, 3, 4, 5, 6, 7, 8, 9); their images are not counted in the accuracy\n" +
		fmt.Sprintf("predict: accuracy %.2f%% (%d of 5 images correct; the true class is each image's folder)\n", 100*float64(correct)/5, correct)
	if stderr != wantErr {
		t.Errorf("stderr %q; want %q", stderr, wantErr)
	}

	// A flat folder: the CSV as before, no true_label column, no accuracy line.
	flatDir := filepath.Join(root, strconv.Itoa(labels[0]))
	code, stdout, stderr = runPredict("-checkpoint", ckpt, flatDir)
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "input,class,label,p0,") {
		t.Errorf("flat folder: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
