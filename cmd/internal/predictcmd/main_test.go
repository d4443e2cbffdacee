package predictcmd

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/cli/clitest"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

func runPredict(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

type line struct {
	Input         string    `json:"input"`
	Class         int       `json:"class"`
	Label         string    `json:"label"`
	TrueLabel     string    `json:"true_label"`
	Probabilities []float64 `json:"probabilities"`
	Logits        []float64 `json:"logits"`
}

func parseLines(t *testing.T, s string) []line {
	t.Helper()
	var out []line
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPredictInputs: images, a directory, CSV and IDX files of the same digits give the
// logits the model computes on the data set's own examples (the training scaling, v/255),
// and the probabilities are their softmax.
func TestPredictInputs(t *testing.T) {
	dir := t.TempDir()
	train, test := clitest.MNIST(t, 256)
	ckpt := clitest.Checkpoint(t, dir, models.MNISTCNN(models.Tanh), train)
	const n = 5
	want := referenceLogits(t, ckpt, test, n)

	pix := make([][]byte, n)
	x := make([]float32, 784)
	var csvText strings.Builder
	csvText.WriteString(strings.Repeat("px,", 783) + "px\n") // a header
	idx := binary.BigEndian.AppendUint32(nil, 0x803)
	idx = binary.BigEndian.AppendUint32(idx, n)
	idx = binary.BigEndian.AppendUint32(idx, 28)
	idx = binary.BigEndian.AppendUint32(idx, 28)
	imgDir := filepath.Join(dir, "digits")
	if err := os.Mkdir(imgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		test.Example(i, x)
		pix[i] = make([]byte, 784)
		gray := image.NewGray(image.Rect(0, 0, 28, 28))
		rgb := image.NewNRGBA(image.Rect(0, 0, 28, 28)) // R = G = B: the same gray
		for j, v := range x {
			b := byte(math.Round(float64(v) * 255))
			pix[i][j], gray.Pix[j] = b, b
			rgb.Set(j%28, j/28, color.NRGBA{b, b, b, 255})
		}
		writePNG(t, filepath.Join(imgDir, fmt.Sprintf("%d.png", i)), gray)
		writePNG(t, filepath.Join(dir, fmt.Sprintf("rgb%d.png", i)), rgb)
		for j, b := range pix[i] {
			if j > 0 {
				csvText.WriteByte(',')
			}
			csvText.WriteString(strconv.Itoa(int(b)))
		}
		csvText.WriteByte('\n')
		idx = append(idx, pix[i]...)
	}
	csvPath := filepath.Join(dir, "digits.csv")
	idxPath := filepath.Join(dir, "digits-idx3-ubyte.gz")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(idx)
	zw.Close()
	for path, b := range map[string][]byte{csvPath: []byte(csvText.String()), idxPath: gz.Bytes()} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name  string
		args  []string
		names func(i int) string
	}{
		{"directory", []string{imgDir}, func(i int) string { return filepath.Join(imgDir, fmt.Sprintf("%d.png", i)) }},
		{"rgb files", []string{filepath.Join(dir, "rgb0.png"), filepath.Join(dir, "rgb1.png"), filepath.Join(dir, "rgb2.png"), filepath.Join(dir, "rgb3.png"), filepath.Join(dir, "rgb4.png")},
			func(i int) string { return filepath.Join(dir, fmt.Sprintf("rgb%d.png", i)) }},
		{"csv", []string{"-scale", "255", csvPath}, func(i int) string { return fmt.Sprintf("%s:%d", csvPath, i) }},
		{"idx", []string{idxPath}, func(i int) string { return fmt.Sprintf("%s:%d", idxPath, i) }},
	} {
		code, stdout, stderr := runPredict(append([]string{"-checkpoint", ckpt, "-json"}, tc.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr)
		}
		lines := parseLines(t, stdout)
		if len(lines) != n {
			t.Fatalf("%s: %d lines, want %d", tc.name, len(lines), n)
		}
		for i, l := range lines {
			if l.Input != tc.names(i) || !slices.Equal(l.Logits, want[i]) {
				t.Errorf("%s %d: %s logits %v, want %s %v", tc.name, i, l.Input, l.Logits, tc.names(i), want[i])
			}
			checkProbabilities(t, l.Probabilities, want[i], l.Class)
			if l.Label != strconv.Itoa(l.Class) { // MNIST's classes are named by their digits
				t.Errorf("%s %d: class %d label %q", tc.name, i, l.Class, l.Label)
			}
		}
	}

	// CSV output: a header, then input, class, label and K probabilities per row.
	code, stdout, stderr := runPredict("-checkpoint", ckpt, imgDir)
	if code != 0 {
		t.Fatalf("csv output: exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil || len(recs) != n+1 || !slices.Equal(recs[0][:4], []string{"input", "class", "label", "p0"}) || len(recs[0]) != 13 {
		t.Fatalf("csv output %q (%v)", stdout, err)
	}
	for i, r := range recs[1:] {
		if c, _ := strconv.Atoi(r[1]); c != nn.Argmax(want[i]) || r[2] != r[1] {
			t.Errorf("row %d: class %s label %s, want %d", i, r[1], r[2], nn.Argmax(want[i]))
		}
	}
}

// referenceLogits computes the logits of the first n examples of ds with the model of
// ckpt, through the data set's own scaling.
func referenceLogits(t *testing.T, ckpt string, ds datasets.Dataset, n int) [][]float64 {
	t.Helper()
	p, err := nn.LoadPredictor(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	size := datasets.Size(ds)
	x := make([]float32, n*size)
	for i := range n {
		ds.Example(i, x[i*size:(i+1)*size])
	}
	z := make([]float64, n*10)
	if err := p.Logits(x, z); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, n)
	for i := range out {
		out[i] = z[i*10 : (i+1)*10]
	}
	return out
}

func checkProbabilities(t *testing.T, p, z []float64, class int) {
	t.Helper()
	var norm, sum float64
	for _, v := range z {
		norm += math.Exp(v)
	}
	for k, v := range p {
		if math.Abs(v-math.Exp(z[k])/norm) > 1e-12 {
			t.Errorf("probability %d = %v, softmax %v", k, v, math.Exp(z[k])/norm)
		}
		sum += v
	}
	if math.Abs(sum-1) > 1e-12 || class != slices.Index(p, slices.Max(p)) {
		t.Errorf("probabilities %v sum to %v, class %d", p, sum, class)
	}
}

func TestPredictRefuses(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 128)
	ckpt := clitest.Checkpoint(t, dir, models.LogisticRegression(), train)
	big := filepath.Join(dir, "big.png")
	writePNG(t, big, image.NewGray(image.Rect(0, 0, 32, 28)))
	jpegLike := filepath.Join(dir, "broken.jpg")
	os.WriteFile(jpegLike, []byte("not a jpeg"), 0o644)
	wide := filepath.Join(dir, "wide.csv")
	os.WriteFile(wide, []byte(strings.Repeat("1,", 784)+"1\n"), 0o644)
	nan := filepath.Join(dir, "nan.csv")
	os.WriteFile(nan, []byte(strings.Repeat("1,", 783)+"NaN\n"), 0o644)
	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, []byte("hello"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	idx := binary.BigEndian.AppendUint32(nil, 0x803)
	idx = binary.BigEndian.AppendUint32(idx, 1)
	idx = binary.BigEndian.AppendUint32(idx, 32)
	idx = binary.BigEndian.AppendUint32(idx, 32)
	idx32 := filepath.Join(dir, "cifar-idx3-ubyte")
	os.WriteFile(idx32, append(idx, make([]byte, 1024)...), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", ckpt, big}, "is 32×28 pixels; the model expects 28×28"},
		{[]string{"-checkpoint", ckpt, jpegLike}, "not a readable PNG or JPEG"},
		{[]string{"-checkpoint", ckpt, wide}, "has 785 values; the model expects 784 (1×28×28); remove the label column"},
		{[]string{"-checkpoint", ckpt, nan}, `column 784: "NaN" is not a finite number`},
		{[]string{"-checkpoint", ckpt, other}, `not an input predict reads: it is text, starting "hello" (a table of numbers must be named .csv). predict reads PNG and JPEG images`},
		{[]string{"-checkpoint", ckpt, empty}, "no .png"},
		{[]string{"-checkpoint", ckpt, idx32}, "32×32 grayscale images; the model expects 1×28×28"},
		{[]string{"-checkpoint", ckpt, filepath.Join(dir, "missing.png")}, "no such file"},
		{[]string{"-checkpoint", ckpt}, "no input"},
		{[]string{"-checkpoint", ckpt, "-scale", "0", big}, "-scale 0"},
		{[]string{big}, "-checkpoint FILE is required"},
	} {
		code, _, stderr := runPredict(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// FuzzDecode: the CSV and IDX readers never panic, and what they accept has the model's
// example length.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("a,b,c,d\n0,1,2,3\n4,5,6,7\n"))
	f.Add([]byte{0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4})
	f.Add([]byte{0, 0, 8, 3, 255, 255, 255, 255, 0, 0, 0, 2, 0, 0, 0, 2})
	f.Add([]byte("x1,x2,kind,x3,x4\n1,2,a,3,4\n-5,9e9,b,0,1\n"))
	r := &reader{shape: []int{1, 2, 2}, scale: 1}
	table := &reader{shape: []int{4}, table: &tableFormat{opts: datasets.CSVOptions{Label: "kind", Ranges: []datasets.Range{{Min: 0, Max: 10}}}, raw: 4}}
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(ex []example, err error) {
			for _, e := range ex {
				if err == nil && len(e.x) != 4 {
					t.Fatalf("example of %d values", len(e.x))
				}
			}
		}
		check(r.decodeCSV("f.csv", bytes.NewReader(b)))
		if d := describe(b[:min(len(b), sniffLen)]); d == "" || strings.ContainsAny(d, "\n\r") {
			t.Fatalf("describe: %q", d)
		}
		check(r.decodeIDX("f", bytes.NewReader(b)))
		ex, err := table.decodeCSV("f.csv", bytes.NewReader(b))
		for _, e := range ex {
			if err == nil && len(e.x) != 4 {
				t.Fatalf("table example of %d values", len(e.x))
			}
			for _, v := range e.x {
				if err == nil && !(v >= 0 && v <= 1) {
					t.Fatalf("table value %v outside [0, 1]", v)
				}
			}
		}
	})
}

// TestPredictRGB: for a 3-channel model, opaque RGB PNGs give the logits the model
// computes on the data set's own examples (channel planes R, G, B, each value v/255).
func TestPredictRGB(t *testing.T) {
	dir := t.TempDir()
	shape := []int{3, 32, 32}
	ds := clitest.Random(t, shape, 10, 64)
	ckpt := clitest.Checkpoint(t, dir, models.CIFAR10CNN(models.Tanh), ds)
	const n = 3
	want := referenceLogits(t, ckpt, ds, n)
	x := make([]float32, 3*32*32)
	var args []string
	for i := range n {
		ds.Example(i, x)
		img := image.NewNRGBA(image.Rect(0, 0, 32, 32))
		for j := range 32 * 32 {
			b := func(c int) byte { return byte(math.Round(float64(x[c*1024+j]) * 255)) }
			img.Set(j%32, j/32, color.NRGBA{b(0), b(1), b(2), 255})
		}
		path := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		writePNG(t, path, img)
		args = append(args, path)
	}
	code, stdout, stderr := runPredict(append([]string{"-checkpoint", ckpt, "-json"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for i, l := range parseLines(t, stdout) {
		if !slices.Equal(l.Logits, want[i]) {
			t.Errorf("%s: logits %v, want %v", l.Input, l.Logits, want[i])
		}
	}
}

// For an all-zero input, logistic regression's logits are its biases (the last 10
// parameters): the average's by default, the raw ones with -params raw.
func TestPredictParams(t *testing.T) {
	dir := t.TempDir()
	train, _ := clitest.MNIST(t, 256)
	ckpt := clitest.AveragedCheckpoint(t, dir, models.LogisticRegression(), train, 0.8, nn.WithDType(nn.Float64))
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	zeros := filepath.Join(dir, "zeros.csv")
	if err := os.WriteFile(zeros, []byte(strings.Repeat("0,", 783)+"0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		which string
		bias  []float64
	}{{"averaged", c.EMAParams[len(c.EMAParams)-10:]}, {"raw", c.Params[len(c.Params)-10:]}} {
		code, stdout, stderr := runPredict("-checkpoint", ckpt, "-json", "-params", tc.which, zeros)
		if code != 0 {
			t.Fatalf("-params %s: exit %d: %s", tc.which, code, stderr)
		}
		got := parseLines(t, stdout)
		if len(got) != 1 || !slices.Equal(got[0].Logits, tc.bias) {
			t.Errorf("-params %s: logits %v, want the biases %v", tc.which, got, tc.bias)
		}
	}
	if slices.Equal(c.EMAParams[len(c.EMAParams)-10:], c.Params[len(c.Params)-10:]) {
		t.Error("averaged and raw biases are equal; the test shows nothing")
	}
}
