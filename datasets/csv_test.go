package datasets

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func readCSVText(t *testing.T, text string, opts CSVOptions) *Table {
	t.Helper()
	tab, err := ReadCSV(strings.NewReader(text), opts)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func rows(tab *Table) [][]float32 {
	var out [][]float32
	for i := range tab.Len() {
		x := make([]float32, tab.Shape()[0])
		tab.Example(i, x)
		out = append(out, x)
	}
	return out
}

// A header, the label column by name in the middle, string labels: classes are the
// names in sorted order; features are scaled by the declared per-feature ranges and the
// values outside them are clipped.
func TestReadCSVHeaderNamedLabels(t *testing.T) {
	text := "height,species,weight\n" +
		"5,dog,100\n" +
		"10,cat,-10\n" + // weight below its range: clipped to 0
		"\n" + // empty lines are skipped
		"2.5,emu,300\n" + // weight above: clipped to 1
		"0,cat,50\n"
	tab := readCSVText(t, text, CSVOptions{Label: "species", Ranges: []Range{{0, 10}, {0, 200}}})
	if tab.Len() != 4 || !slices.Equal(tab.Shape(), []int{2}) || tab.NumClasses() != 3 {
		t.Fatalf("Len %d Shape %v NumClasses %d", tab.Len(), tab.Shape(), tab.NumClasses())
	}
	if !slices.Equal(tab.ClassNames, []string{"cat", "dog", "emu"}) || !slices.Equal(tab.FeatureNames, []string{"height", "weight"}) {
		t.Errorf("classes %v features %v", tab.ClassNames, tab.FeatureNames)
	}
	if got := Labels(tab); !slices.Equal(got, []int{1, 0, 2, 0}) {
		t.Errorf("labels %v, want dog=1 cat=0 emu=2 cat=0", got)
	}
	want := [][]float32{{0.5, 0.5}, {1, 0}, {0.25, 1}, {0, 0.25}}
	for i, r := range rows(tab) {
		if !slices.Equal(r, want[i]) {
			t.Errorf("row %d = %v, want %v", i, r, want[i])
		}
	}
	if tab.Clipped != 2 {
		t.Errorf("Clipped = %d, want 2", tab.Clipped)
	}
}

// No header (detected: every cell is a number), the label by index 0, integer labels:
// the labels are the integers, NumClasses the largest plus one.
func TestReadCSVIntegerLabels(t *testing.T) {
	text := "3,1,2\n0,-1,0.5\n3,0,1e0\n"
	tab := readCSVText(t, text, CSVOptions{Label: "0", Ranges: []Range{{-1, 3}}})
	if tab.Len() != 3 || tab.NumClasses() != 4 || tab.FeatureNames != nil {
		t.Fatalf("Len %d NumClasses %d features %v", tab.Len(), tab.NumClasses(), tab.FeatureNames)
	}
	if got := Labels(tab); !slices.Equal(got, []int{3, 0, 3}) {
		t.Errorf("labels %v", got)
	}
	want := [][]float32{{0.5, 0.75}, {0, 0.375}, {0.25, 0.5}}
	for i, r := range rows(tab) {
		for j := range r {
			if math.Abs(float64(r[j]-want[i][j])) > 1e-7 {
				t.Errorf("row %d = %v, want %v", i, r, want[i])
			}
		}
	}
	// The default label column is the last; a header is detected by a non-number.
	tab = readCSVText(t, "a;b;class\n1;2;x\n3;4;1\n", CSVOptions{Comma: ';', Ranges: []Range{{0, 4}}})
	if tab.Len() != 2 || !slices.Equal(tab.ClassNames, []string{"1", "x"}) || !slices.Equal(Labels(tab), []int{1, 0}) {
		t.Errorf("mixed labels are names: classes %v labels %v", tab.ClassNames, Labels(tab))
	}
	// HeaderYes skips a numeric first row; HeaderNo reads a non-numeric one as data (an error).
	if tab := readCSVText(t, "1,2\n3,0\n", CSVOptions{Header: HeaderYes, Ranges: []Range{{0, 4}}}); tab.Len() != 1 {
		t.Errorf("HeaderYes: %d rows", tab.Len())
	}
	if _, err := ReadCSV(strings.NewReader("f,label\n3,0\n"), CSVOptions{Header: HeaderNo, Ranges: []Range{{0, 4}}}); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("HeaderNo with a header: %v", err)
	}
}

func TestReadCSVErrors(t *testing.T) {
	r := []Range{{0, 1}}
	for _, tc := range []struct {
		text string
		opts CSVOptions
		want string
	}{
		{"", CSVOptions{Ranges: r}, "no rows"},
		{"1\n", CSVOptions{Ranges: r}, "at least one feature"},
		{"a,b\n", CSVOptions{Ranges: r}, "no data rows"},
		{"1,0\n2,1,3\n", CSVOptions{Ranges: r}, "line 2"},
		{"1,0\n2\n", CSVOptions{Ranges: r}, "line 2"},
		{"1,0\n0.5,1\nx,1\n", CSVOptions{Header: HeaderNo, Ranges: r}, `line 3: column 1: "x" is not a number`},
		{"1,0\nNaN,1\n", CSVOptions{Ranges: r}, "missing value \"NaN\""},
		{"1,0\nInf,1\n", CSVOptions{Ranges: r}, "not a finite number"},
		{"1,0\nInf,1\n", CSVOptions{Ranges: r}, "not a finite number"},
		{"1,0\n", CSVOptions{}, "no feature range"},
		{"1,2,0\n", CSVOptions{Ranges: []Range{{0, 1}, {0, 1}, {0, 1}}}, "3 feature ranges for 2"},
		{"1,0\n", CSVOptions{Ranges: []Range{{1, 1}}}, "LO < HI"},
		{"1,0\n", CSVOptions{Ranges: []Range{{0, math.NaN()}}}, "LO < HI"},
		{"a,b\n1,0\n", CSVOptions{Label: "c", Ranges: r}, `no column named "c"`},
		{"1,0\n", CSVOptions{Label: "2", Ranges: r}, "label column 2"},
		{"1,0\n", CSVOptions{Label: "-1", Ranges: r}, "label column -1"},
		{"a,b\n1,0\n", CSVOptions{Label: "b", Header: HeaderNo, Ranges: r}, "no header"},
		{"1,\n", CSVOptions{Ranges: r}, "empty label"},
		{"1,\"0\n", CSVOptions{Ranges: r}, "quote"},
		{"1,70000\n", CSVOptions{Ranges: r}, "at most 65536 classes"},
	} {
		_, err := ReadCSV(strings.NewReader(tc.text), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.text, err, tc.want)
		}
	}
	_, err := ReadCSV(strings.NewReader("1,0\nx,0\n"), CSVOptions{Ranges: r})
	if !errors.Is(err, ErrCSV) {
		t.Errorf("bad cell: %v does not wrap ErrCSV", err)
	}
	if _, err := LoadCSV("/nonexistent/file.csv", CSVOptions{Ranges: r}); err == nil || !strings.Contains(err.Error(), "file.csv") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseRanges(t *testing.T) {
	rs, err := ParseRanges("0:255")
	if err != nil || !slices.Equal(rs, []Range{{0, 255}}) {
		t.Errorf("0:255 → %v, %v", rs, err)
	}
	rs, err = ParseRanges("-1:1, 0:1e3")
	if err != nil || !slices.Equal(rs, []Range{{-1, 1}, {0, 1000}}) {
		t.Errorf("two ranges → %v, %v", rs, err)
	}
	for _, bad := range []string{"", "1", "1:0", "a:b", "0:inf", "0:1,", "NaN:1"} {
		if _, err := ParseRanges(bad); err == nil {
			t.Errorf("ParseRanges(%q): no error", bad)
		}
	}
}

// FuzzReadCSV: on any input ReadCSV returns an error or a consistent table (no panic),
// whose values lie in [0, 1] and labels in [0, NumClasses).
func FuzzReadCSV(f *testing.F) {
	f.Add("a,b,label\n1,2,x\n3,4,y\n", "label")
	f.Add("1,2,0\n3,4,1\n", "")
	f.Add("1,2,0\n3,4\n", "0")
	f.Add("\"1\",\"2\n", "")
	f.Add("1,NaN,1\n", "1")
	f.Add("x\n", "x")
	f.Fuzz(func(t *testing.T, text, label string) {
		tab, err := ReadCSV(strings.NewReader(text), CSVOptions{Label: label, Ranges: []Range{{-10, 10}}})
		if err != nil {
			return
		}
		n := tab.Shape()[0]
		if n < 1 || tab.Len() < 1 || tab.NumClasses() < 1 {
			t.Fatalf("%d features, %d rows, %d classes", n, tab.Len(), tab.NumClasses())
		}
		x := make([]float32, n)
		for i := range tab.Len() {
			if l := tab.Example(i, x); l < 0 || l >= tab.NumClasses() {
				t.Fatalf("row %d: label %d of %d classes", i, l, tab.NumClasses())
			}
			for _, v := range x {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("row %d: value %v outside [0, 1]", i, v)
				}
			}
		}
	})
}

// TestReadCSVUnlabelled: a file without its label column, read Unlabelled, gives the
// features that the labelled file gives (same scaling, clipping and header rule), every
// label 0 and no classes; a label column named for an unlabelled read is refused.
func TestReadCSVUnlabelled(t *testing.T) {
	r := []Range{{0, 10}, {-2, 2}}
	labelled := "a,kind,b\n1,x,0\n12,y,-3\n5,x,1.5\n"
	unlabelled := "a,b\n1,0\n12,-3\n5,1.5\n"
	want, err := ReadCSV(strings.NewReader(labelled), CSVOptions{Label: "kind", Ranges: r})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadCSV(strings.NewReader(unlabelled), CSVOptions{Unlabelled: true, Ranges: r})
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != 3 || got.NumClasses() != 0 || !slices.Equal(got.Shape(), []int{2}) || got.Clipped != want.Clipped || !slices.Equal(got.FeatureNames, []string{"a", "b"}) {
		t.Fatalf("unlabelled table: %d rows, %d classes, shape %v, %d clipped, names %v", got.Len(), got.NumClasses(), got.Shape(), got.Clipped, got.FeatureNames)
	}
	x, y := make([]float32, 2), make([]float32, 2)
	for i := range 3 {
		if label := got.Example(i, x); label != 0 {
			t.Errorf("row %d: label %d, want 0", i, label)
		}
		want.Example(i, y)
		if !slices.Equal(x, y) {
			t.Errorf("row %d: %v, want %v as read with the label column", i, x, y)
		}
	}
	// (12−0)/10 is clipped to 1, (−3+2)/4 to 0: the scaling by hand.
	got.Example(1, x)
	if x[0] != 1 || x[1] != 0 {
		t.Errorf("row 1 scaled to %v, want [1 0]", x)
	}
	one, err := ReadCSV(strings.NewReader("5\n"), CSVOptions{Unlabelled: true, Ranges: []Range{{0, 10}}})
	if err != nil || one.Len() != 1 {
		t.Errorf("one column, unlabelled: %v, %v", one, err)
	}
	if _, err := ReadCSV(strings.NewReader(unlabelled), CSVOptions{Unlabelled: true, Label: "b", Ranges: r}); !errors.Is(err, ErrCSV) {
		t.Errorf("Unlabelled with a label column: %v, want ErrCSV", err)
	}
	if _, err := ReadCSV(strings.NewReader("a,b\n"), CSVOptions{Unlabelled: true, Ranges: r}); !errors.Is(err, ErrCSV) {
		t.Errorf("a header and no rows: %v, want ErrCSV", err)
	}
}

// TestCSVErrorPlace: a bad cell's error carries its line and column (errors.As), a bad
// row its line, and both match ErrCSV.
func TestCSVErrorPlace(t *testing.T) {
	for _, tc := range []struct {
		in           string
		line, column int
	}{
		{"1,0\n2,0\n3,x,0\n", 3, -1},
		{"a,b,label\n1,2,0\n3,NaN,1\n", 3, 1},
		{"1,0\n\n\noops,1\n", 4, 0},
	} {
		_, err := ReadCSV(strings.NewReader(tc.in), CSVOptions{Header: HeaderAuto, Ranges: []Range{{0, 5}}})
		var ce *CSVError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCSV) || ce.Line != tc.line || ce.Column != tc.column {
			t.Errorf("%q: %v (%+v), want line %d column %d", tc.in, err, ce, tc.line, tc.column)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for s, want := range map[string]Header{"auto": HeaderAuto, "yes": HeaderYes, "no": HeaderNo} {
		if h, err := ParseHeader(s); err != nil || h != want {
			t.Errorf("ParseHeader(%q) = %v, %v", s, h, err)
		}
	}
	if _, err := ParseHeader("maybe"); err == nil {
		t.Error("ParseHeader(maybe) accepted")
	}
}
