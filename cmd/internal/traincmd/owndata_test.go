package traincmd

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// writeBlobsCSV writes n rows of two well separated classes ("left" around 2, "right"
// around 8 in every one of 4 features, ±1.5 uniform) with a header and the label in the
// middle column.
func writeBlobsCSV(t *testing.T, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("f1,f2,species,f3,f4\n")
	for i := range n {
		centre, name := 2.0, "left"
		if i%2 == 1 {
			centre, name = 8.0, "right"
		}
		v := func() string { return fmt.Sprintf("%.3f", centre+3*(rng.Float64()-0.5)) }
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s\n", v(), v(), name, v(), v())
	}
	p := filepath.Join(t.TempDir(), "blobs.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCSVDataset trains logistic regression and an MLP privately on a CSV file of two
// separable classes: the split is about 80/20 (as the content-hash split computed here
// makes it), the model has 4·2+2 (logreg) or 4·16+16+16·2+2 (mlp 16) parameters, and
// the accuracy is far above chance.
func TestCSVDataset(t *testing.T) {
	p := writeBlobsCSV(t, 500)
	kept, held := blobsSplitSizes(t, p, 0.2, 1)
	for _, tc := range []struct {
		args   []string
		model  string
		params float64
	}{
		{nil, "logreg", 10},
		{[]string{"-model", "mlp", "-hidden", "16"}, "mlp-16-tanh", 64 + 16 + 32 + 2},
	} {
		args := append([]string{"-dataset", "csv:" + p, "-label", "species", "-scale", "0:10", "-batch", "50", "-epochs", "5", "-lr", "2", "-json"}, tc.args...)
		code, stdout, stderr := runCmd(t, context.Background(), args...)
		if code != exit.OK {
			t.Fatalf("train %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		s := decodeSummary(t, stdout)
		if s["model"] != tc.model || s["parameters"].(float64) != tc.params || s["train_examples"].(float64) != float64(kept) || s["test_examples"].(float64) != float64(held) {
			t.Errorf("%s: %v; want %d training and %d test examples", tc.model, s, kept, held)
		}
		if s["epsilon"].(float64) > 3 || s["test_accuracy"].(float64) < 0.9 {
			t.Errorf("%s: ε %v, accuracy %v: want ≤ 3 and ≥ 0.9 on separable blobs", tc.model, s["epsilon"], s["test_accuracy"])
		}
		if !strings.Contains(stderr, "classes: 0=left, 1=right") {
			t.Errorf("stderr does not list the classes: %s", stderr)
		}
	}
	// Resuming takes the data flags from the checkpoint.
	ck := filepath.Join(t.TempDir(), "r.ckpt")
	mustRun(t, "-dataset", "csv:"+p, "-label", "species", "-scale", "0:10", "-batch", "50", "-epochs", "1", "-seed", "1", "-checkpoint", ck)
	code, _, stderr := runCmd(t, context.Background(), "-resume", ck, "-epochs", "1")
	if code != exit.OK || !strings.Contains(stderr, "scale") {
		t.Errorf("resume of a csv run: exit %d: %s", code, stderr)
	}
	code, _, stderr = runCmd(t, context.Background(), "-resume", ck, "-scale", "0:20")
	if code != exit.Usage || !strings.Contains(stderr, "the run was trained with -scale 0:10, this command asks for -scale 0:20") {
		t.Errorf("resume with another -scale: exit %d: %s", code, stderr)
	}
}

// writeDigitFolder writes perClass digits of classes 0, 1, 2 from the embedded MNIST
// sample as PNGs into one folder per class ("zero", "one", "two": sorted, the classes
// are one=0, two=1, zero=2).
func writeDigitFolder(t *testing.T, perClass, size int) string {
	t.Helper()
	train, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	names := []string{"zero", "one", "two"}
	count := make([]int, 3)
	x := make([]float32, 784)
	for i := 0; i < train.Len(); i++ {
		l := train.Example(i, x)
		if l > 2 || count[l] == perClass {
			continue
		}
		img := image.NewGray(image.Rect(0, 0, size, size))
		for y := range size {
			for xx := range size {
				img.SetGray(xx, y, color.Gray{byte(x[y*28+xx]*255 + 0.5)})
			}
		}
		p := filepath.Join(dir, names[l], fmt.Sprintf("%03d.png", count[l]))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
		count[l]++
	}
	return dir
}

// TestImageFolderDataset: 28×28 gray images get the MNIST CNN (1×28×28, 3 classes: its
// last layer 32·3+3 instead of 330 parameters: 25,779) without -model; other sizes need
// -image-size or a flat model.
func TestImageFolderDataset(t *testing.T) {
	dir := writeDigitFolder(t, 40, 28)
	s := decodeSummary(t, mustRun(t, "-dataset", "images:"+dir, "-batch", "24", "-epochs", "1", "-test-fraction", "0.25", "-json"))
	folder, err := datasets.LoadImageFolder(dir, datasets.ImageFolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept, held := hashSplitSizes(t, folder, 0.25, 1, datasets.DomainTest)
	if s["model"] != "mnist-cnn-tanh" || s["parameters"].(float64) != 26010-330+99 || s["train_examples"].(float64) != float64(kept) || s["test_examples"].(float64) != float64(held) || kept+held != 120 {
		t.Errorf("images run: %v; want %d training and %d test examples of 120", s, kept, held)
	}
	small := writeDigitFolder(t, 10, 20)
	code, _, stderr := runCmd(t, context.Background(), "-dataset", "images:"+small, "-batch", "6", "-epochs", "1")
	if code != exit.Usage || !strings.Contains(stderr, "1×20×20") || !strings.Contains(stderr, "-image-size") {
		t.Errorf("20×20 images without -model: exit %d: %q", code, stderr)
	}
	code, _, stderr = runCmd(t, context.Background(), "-dataset", "images:"+small, "-model", "cifar-cnn", "-batch", "6", "-epochs", "1")
	if code != exit.Usage || !strings.Contains(stderr, "C×32×32") || !strings.Contains(stderr, "1×20×20") {
		t.Errorf("20×20 images with cifar-cnn: exit %d: %q", code, stderr)
	}
	s = decodeSummary(t, mustRun(t, "-dataset", "images:"+small, "-image-size", "28x28", "-channels", "3", "-batch", "6", "-epochs", "1", "-json"))
	// 3 input channels: the first conv has 16·3·8·8+16 = 3,088 instead of 1,040 parameters
	if s["parameters"].(float64) != 26010-330+99-1040+3088 {
		t.Errorf("resized RGB run: %v", s)
	}
	s = decodeSummary(t, mustRun(t, "-dataset", "images:"+small, "-model", "logreg", "-batch", "6", "-epochs", "1", "-json"))
	if s["parameters"].(float64) != 400*3+3 {
		t.Errorf("logreg on 20×20: %v", s)
	}
}

// TestCIFAR100 reads CIFAR-100's binary layout (coarse label, fine label, 3,072 pixels)
// with fine labels by default and coarse ones with -labels coarse; logistic regression
// has 3,072·K+K parameters.
func TestCIFAR100(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cifar-100-binary")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"train.bin": 40, "test.bin": 10} {
		var b []byte
		for i := range n {
			fine := (i * 7) % 100
			r := make([]byte, 3074)
			r[0], r[1] = byte(fine%20), byte(fine) // any fine→coarse map consistent over the file
			for j := 2; j < len(r); j++ {
				r[j] = byte(i + j)
			}
			b = append(b, r...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := decodeSummary(t, mustRun(t, "-dataset", "cifar100", "-data", dir, "-model", "logreg", "-batch", "20", "-epochs", "1", "-json"))
	if s["dataset"] != "cifar100" || s["parameters"].(float64) != 3072*100+100 || s["train_examples"].(float64) != 40 {
		t.Errorf("cifar100: %v", s)
	}
	s = decodeSummary(t, mustRun(t, "-dataset", "cifar100", "-labels", "coarse", "-data", dir, "-model", "logreg", "-batch", "20", "-epochs", "1", "-json"))
	if s["dataset"] != "cifar100-coarse" || s["parameters"].(float64) != 3072*20+20 {
		t.Errorf("cifar100 coarse: %v", s)
	}
}

// TestOwnDataBadFlags: every mistake with your own data exits 2 with one line naming it.
func TestOwnDataBadFlags(t *testing.T) {
	p := writeBlobsCSV(t, 20)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(bad, []byte("a,b,label\n1,2,x\n3,oops,y\n"), 0o644)
	imgs := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-dataset", "csv:" + p}, "-scale"},
		{[]string{"-dataset", "csv:" + p, "-scale", "1:0"}, "-scale"},
		{[]string{"-dataset", "csv:" + p, "-scale", "0:1,0:1"}, "2 feature ranges for 4"},
		{[]string{"-dataset", "csv:" + bad, "-scale", "0:5"}, `line 3: column 2 "b": "oops" is not a number`},
		{[]string{"-dataset", "csv:" + p, "-scale", "0:10", "-label", "kind"}, `no column named "kind"`},
		{[]string{"-dataset", "csv:" + p, "-scale", "0:10", "-label", "species", "-model", "cnn"}, "takes C×28×28 images"},
		{[]string{"-dataset", "csv:" + p, "-scale", "0:10", "-image-size", "28x28"}, "-image-size"},
		{[]string{"-dataset", "csv:" + p, "-scale", "0:10", "-test-fraction", "1"}, "-test-fraction"},
		{[]string{"-dataset", "csv:" + p, "-scale", "0:10", "-data", "x"}, "-data"},
		{[]string{"-dataset", "csv:" + p, "-scale", "0:10", "-header", "maybe"}, "-header"},
		{[]string{"-dataset", "csv:"}, "path after the colon"},
		{[]string{"-dataset", "csv:/nonexistent.csv", "-scale", "0:1"}, "no such file"},
		{[]string{"-dataset", "images:" + imgs}, "no class folders"},
		{[]string{"-dataset", "images:" + imgs, "-scale", "0:1"}, "-scale"},
		{[]string{"-dataset", "images:" + imgs, "-image-size", "28"}, "-image-size"},
		{[]string{"-dataset", "images:" + imgs, "-channels", "2"}, "-channels"},
		{[]string{"-label", "x"}, "-label"},
		{[]string{"-labels", "coarse"}, "-labels"},
		{[]string{"-dataset", "cifar100"}, "-data"},
		{[]string{"-dataset", "cifar100", "-labels", "medium", "-data", "."}, "-labels"},
		{[]string{"-hidden", "10"}, "-hidden"},
		{[]string{"-dataset", "cifar100", "-model", "cnn", "-data", "."}, "-model"},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), tc.args...)
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("train %s: exit %d, stderr %q; want 2 and one line mentioning %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

// TestCSVTable: a real table — the label named and in the middle, a categorical column,
// missing cells — trains with its declarations, which the checkpoint records; without
// them the errors name the column by header and count from 1, and say which flag fixes it.
func TestCSVTable(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("age,sex,status,weight\n")
	for i := range 80 {
		age := fmt.Sprint(20 + i%50)
		if i%9 == 4 {
			age = "NA"
		}
		fmt.Fprintf(&b, "%s,%s,%s,%d\n", age, []string{"F", "M"}[i%2], []string{"healthy", "ill"}[(i/3)%2], 50+i)
	}
	path := filepath.Join(dir, "patients.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	common := []string{"-dataset", "csv:" + path, "-epochs", "2", "-batch", "20"}
	s := decodeSummary(t, mustRun(t, append(common, "-scale", "0:100,0:200", "-label", "status", "-categorical", "sex=F,M", "-missing", "age=45",
		"-missing-indicator", "-checkpoint", ckpt, "-json")...))
	if s["parameters"].(float64) != 2*(5+1) {
		t.Errorf("%v parameters, want 12: logreg on age, its indicator, sex=F, sex=M, weight (2 classes)", s["parameters"])
	}
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Settings["categorical"] != "sex=F,M" || c.Settings["missing"] != "age=45" || c.Settings["missing-indicator"] != "true" || c.Settings["label"] != "status" {
		t.Errorf("checkpoint settings %v", c.Settings)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, `line 2: column 2 "sex": "F" is not a number; if the column is categorical, declare its categories: -categorical sex=A,B,…; if it is the label, -label sex`},
		{[]string{"-label", "status"}, `-categorical sex=A,B,…`},
		{[]string{"-label", "status", "-categorical", "sex=F,M"}, `line 6: column 1 "age": missing value "NA"; declare the value a missing cell of this column takes: -missing age=VALUE`},
		{[]string{"-label", "status", "-categorical", "sex=F"}, "-categorical sex=F: categorical column \"sex\": 1 category; want at least 2"},
		{[]string{"-label", "status", "-missing-indicator"}, "-missing-indicator: give -missing"},
	} {
		code, _, stderr := runCmd(t, context.Background(), append(append(common, "-scale", "0:200"), tc.args...)...)
		if code != exit.Usage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want a one-line usage error saying %q", tc.args, code, stderr, tc.want)
		}
	}
}
