package data

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadCSV(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		opts  CSVOptions
		wantX [][]float64
		wantY []float64
	}{
		{"no header", "1,2,0\n3,4,1\n", CSVOptions{}, [][]float64{{1, 2}, {3, 4}}, []float64{0, 1}},
		{"named header", "a,b,label\n1,2,0\n3,4,1\n", CSVOptions{}, [][]float64{{1, 2}, {3, 4}}, []float64{0, 1}},
		{"sklearn header", "2,2,neg,pos\n1,2,0\n3,4,1\n", CSVOptions{}, [][]float64{{1, 2}, {3, 4}}, []float64{0, 1}},
		{"label first", "7,1,2\n8, 3, 4\n", CSVOptions{LabelColumn: 1}, [][]float64{{1, 2}, {3, 4}}, []float64{7, 8}},
		{"forced header", "1,2,3\n4,5,6\n", CSVOptions{Header: HeaderYes}, [][]float64{{4, 5}}, []float64{6}},
		{"semicolon", "1;2;3\n", CSVOptions{Comma: ';'}, [][]float64{{1, 2}}, []float64{3}},
		{"blank lines", "1,2,3\n\n4,5,6\n", CSVOptions{}, [][]float64{{1, 2}, {4, 5}}, []float64{3, 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ds, err := ReadCSV(strings.NewReader(c.in), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkRead(t, ds, c.wantX, c.wantY)
		})
	}
}

func TestReadCSVErrors(t *testing.T) {
	cases := []struct {
		name, in string
		opts     CSVOptions
		want     string
	}{
		{"empty", "", CSVOptions{}, "no data lines"},
		{"header only", "a,b,c\n", CSVOptions{}, "no data lines"},
		{"ragged", "1,2,3\n4,5\n", CSVOptions{}, "line 2: 2 fields, want 3"},
		{"not a number", "1,2,3\n4,x,6\n", CSVOptions{}, "line 2, column 2: \"x\""},
		{"nan", "1,2,3\n4,NaN,6\n", CSVOptions{}, "line 2, column 2"},
		{"one column", "1\n2\n", CSVOptions{}, "line 1: 1 field"},
		{"label column too big", "1,2\n", CSVOptions{LabelColumn: 3}, "label column 3"},
		{"truncated sklearn file", "3,2,neg,pos\n1,2,0\n3,4,1\n", CSVOptions{}, "announces 3 examples but the file holds 2"},
		{"bad quote", "1,\"2,3\n", CSVOptions{}, "line 1"},
		{"too many elements", "1,2,3\n4,5,6\n", CSVOptions{MaxElements: 5}, "line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadCSV(strings.NewReader(c.in), c.opts)
			checkReadError(t, err, c.want, ErrFormat, ErrInvalid)
		})
	}
}

func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"1,2,0\n3,4,1\n", "a,b,label\n1,2,0\n", "2,2,neg,pos\n1,2,0\n3,4,1\n",
		"1,2\n3\n", "\"1\",\"2\"\n", "1,\"2\n", "1e308,-1e308,5\n", ",,\n", "3,2,x,y\n1,2,0\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ds, err := ReadCSV(strings.NewReader(in), CSVOptions{MaxElements: 1 << 16})
		checkFuzzRead(t, ds, err)
	})
}

// sklearnData returns the path of a file in scikit-learn's bundled data
// directory (Debian's python3-sklearn), skipping the test when it is absent.
func sklearnData(t *testing.T, name string) string {
	t.Helper()
	for _, dir := range []string{
		"/usr/lib/python3/dist-packages/sklearn/datasets/data",
		"/usr/local/lib/python3/dist-packages/sklearn/datasets/data",
	} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skipf("%s not found: install python3-sklearn to run this test", name)
	return ""
}

// TestBreastCancer checks the reader against the published description of the
// Wisconsin diagnostic breast cancer data (scikit-learn's load_breast_cancer
// docs: 569 samples, 30 features, 212 malignant (0) and 357 benign (1)), and
// that Normalize yields unit rows with every feature's largest |value| before
// row scaling equal to 1.
func TestBreastCancer(t *testing.T) {
	ds, err := ReadFile(sklearnData(t, "breast_cancer.csv"), FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 569 || ds.Dim() != 30 {
		t.Fatalf("shape %d×%d, want 569×30", ds.Len(), ds.Dim())
	}
	var zeros, ones int
	for _, y := range ds.Y {
		switch y {
		case 0:
			zeros++
		case 1:
			ones++
		}
	}
	if zeros != 212 || ones != 357 {
		t.Fatalf("labels: %d zeros and %d ones, want 212 and 357", zeros, ones)
	}
	// First row, first and last features, from the file's second line.
	if ds.X.At(0, 0) != 17.99 || ds.X.At(0, 29) != 0.1189 {
		t.Errorf("row 0 = %v … %v, want 17.99 … 0.1189", ds.X.At(0, 0), ds.X.At(0, 29))
	}
	if err := ds.BinaryLabels(); err != nil {
		t.Fatal(err)
	}
	ds.Normalize()
	if err := ds.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range ds.Len() {
		var s float64
		for _, v := range ds.Row(i) {
			s += v * v
		}
		if math.Abs(s-1) > 1e-12 {
			t.Fatalf("row %d has squared norm %v after Normalize", i, s)
		}
	}
	if ds.L2Bound != 1 || math.Abs(ds.L1Bound-math.Sqrt(30)) > 1e-15 {
		t.Errorf("bounds %v %v, want 1 and √30", ds.L2Bound, ds.L1Bound)
	}
}
