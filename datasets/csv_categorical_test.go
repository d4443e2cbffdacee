package datasets

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// patients is a small table with a categorical column (sex), missing cells (age, sex),
// and the label (status) in the middle.
const patients = `age,sex,status,weight
40,F,healthy,60
,M,ill,80
70,?,ill,NA
`

// TestCSVCategoricalMissing: the features of each row, written out by hand from the
// declarations: age scaled by 0:100 (missing → 50), sex one-hot over F, M (missing → M),
// weight scaled by 0:200 (missing → 100), an indicator after each declared column.
func TestCSVCategoricalMissing(t *testing.T) {
	cat, err := ParseCategorical("sex=F,M")
	if err != nil {
		t.Fatal(err)
	}
	miss, err := ParseMissing("age=50;sex=M;weight=100")
	if err != nil {
		t.Fatal(err)
	}
	opts := CSVOptions{Label: "status", Ranges: []Range{{0, 100}, {0, 200}}, Categorical: cat, Missing: miss, MissingIndicator: true}
	tab, err := ReadCSV(strings.NewReader(patients), opts)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"age", "age missing", "sex=F", "sex=M", "sex missing", "weight", "weight missing"}
	if !slices.Equal(tab.FeatureNames, wantNames) {
		t.Errorf("features %q, want %q", tab.FeatureNames, wantNames)
	}
	want := [][]float32{
		{0.4, 0, 1, 0, 0, 0.3, 0},
		{0.5, 1, 0, 1, 0, 0.4, 0},
		{0.7, 0, 0, 1, 1, 0.5, 1},
	}
	if tab.Len() != 3 || tab.NumClasses() != 2 || opts.EncodedFeatures(3) != 7 || tab.Shape()[0] != 7 {
		t.Fatalf("%d rows, %d classes, shape %v", tab.Len(), tab.NumClasses(), tab.Shape())
	}
	x := make([]float32, 7)
	for i, w := range want {
		if y := tab.Example(i, x); y != []int{0, 1, 1}[i] || !slices.Equal(x, w) {
			t.Errorf("row %d: %v label %d, want %v", i, x, y, w)
		}
	}
	// Without indicators, and with one range for the numeric columns.
	opts.MissingIndicator, opts.Ranges = false, []Range{{0, 200}}
	if tab, err = ReadCSV(strings.NewReader(patients), opts); err != nil {
		t.Fatal(err)
	}
	tab.Example(2, x[:4])
	if !slices.Equal(x[:4], []float32{0.35, 0, 1, 0.5}) || opts.EncodedFeatures(3) != 4 {
		t.Errorf("row 2 without indicators: %v", x[:4])
	}
}

// TestCSVCategoricalErrors: each mistake is an error naming the column by its header name
// and its place counted from 1.
func TestCSVCategoricalErrors(t *testing.T) {
	cat := []Categorical{{"sex", []string{"F", "M"}}}
	r := []Range{{0, 200}}
	for _, tc := range []struct {
		in   string
		opts CSVOptions
		want string
	}{
		{patients, CSVOptions{Label: "status", Ranges: r, Missing: []Missing{{"age", "1"}, {"weight", "1"}}},
			`line 2: column 2 "sex": "F" is not a number`},
		{patients, CSVOptions{Label: "status", Ranges: r, Categorical: cat, Missing: []Missing{{"sex", "F"}, {"weight", "1"}}},
			`line 3: column 1 "age": missing value ""`},
		{"a,sex,y\n1,X,0\n", CSVOptions{Ranges: r, Categorical: cat}, `line 2: column 2 "sex": "X" is not one of the declared categories (F, M)`},
		{"a,b,y\n1,2,0\n", CSVOptions{Ranges: r, Categorical: cat}, `categorical column "sex": no column of that name`},
		{"a,sex\n1,F\n", CSVOptions{Ranges: r, Categorical: cat}, `categorical column "sex" is the label column`},
		{"1,F,0\n", CSVOptions{Header: HeaderNo, Ranges: r, Categorical: cat}, "no header"},
		{"a,sex,y\n1,F,0\n", CSVOptions{Ranges: r, Categorical: cat, Missing: []Missing{{"sex", "U"}}}, `"U" is not one of its declared categories`},
		{"a,sex,y\n1,F,0\n", CSVOptions{Ranges: r, Categorical: cat, Missing: []Missing{{"a", "lots"}}}, `missing value of column "a": "lots" is not a number`},
		{"a,b,sex,y\n1,2,F,0\n", CSVOptions{Ranges: []Range{{0, 1}, {0, 1}, {0, 1}}, Categorical: cat}, "3 feature ranges for 2 numeric features"},
	} {
		_, err := ReadCSV(strings.NewReader(tc.in), tc.opts)
		if err == nil || !errors.Is(err, ErrCSV) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error saying %s", tc.in, err, tc.want)
		}
	}
	var ce *CSVError
	_, err := ReadCSV(strings.NewReader("a,b,y\n1,healthy,0\n"), CSVOptions{Ranges: r})
	if !errors.As(err, &ce) || !ce.NotNumber || ce.Name != "b" || ce.Column != 1 {
		t.Errorf("a word in a numeric column: %v (%+v)", err, ce)
	}
}

func TestParseCategoricalMissing(t *testing.T) {
	c, err := ParseCategorical(" sex = F, M ; smoker=no,yes")
	if err != nil || len(c) != 2 || c[0].Column != "sex" || !slices.Equal(c[0].Categories, []string{"F", "M"}) || !slices.Equal(c[1].Categories, []string{"no", "yes"}) {
		t.Errorf("ParseCategorical: %+v, %v", c, err)
	}
	for _, bad := range []string{"sex", "sex=F", "sex=F,F", "sex=F,?", "=a,b", "s=a,b;s=c,d"} {
		if _, err := ParseCategorical(bad); err == nil {
			t.Errorf("ParseCategorical(%q) accepted", bad)
		}
	}
	m, err := ParseMissing("age=40; sex = F")
	if err != nil || !slices.Equal(m, []Missing{{"age", "40"}, {"sex", "F"}}) {
		t.Errorf("ParseMissing: %+v, %v", m, err)
	}
	for _, bad := range []string{"age", "age=", "age=NA", "=3", "a=1;a=2"} {
		if _, err := ParseMissing(bad); err == nil {
			t.Errorf("ParseMissing(%q) accepted", bad)
		}
	}
}

// FuzzReadCSVCategorical: with categorical and missing-value declarations no input
// panics, and every row read has one feature per name, values in [0, 1], exactly one of
// the sex categories set and 0/1 indicators.
func FuzzReadCSVCategorical(f *testing.F) {
	f.Add(patients)
	f.Add("age,sex,status,weight\n1,F,a,2\n")
	f.Add("age,sex,status,weight\n,?,a,\n")
	opts := CSVOptions{Label: "status", Ranges: []Range{{0, 100}}, Categorical: []Categorical{{"sex", []string{"F", "M"}}},
		Missing: []Missing{{"age", "5"}, {"sex", "F"}}, MissingIndicator: true}
	f.Fuzz(func(t *testing.T, in string) {
		tab, err := ReadCSV(strings.NewReader(in), opts)
		if err != nil {
			return
		}
		n := tab.Shape()[0]
		if len(tab.FeatureNames) != n {
			t.Fatalf("%d features named %q", n, tab.FeatureNames)
		}
		f, m := slices.Index(tab.FeatureNames, "sex=F"), slices.Index(tab.FeatureNames, "sex=M")
		x := make([]float32, n)
		for i := range tab.Len() {
			tab.Example(i, x)
			if x[f]+x[m] != 1 {
				t.Fatalf("row %d: sex one-hot %v %v", i, x[f], x[m])
			}
			for j, v := range x {
				if !(v >= 0 && v <= 1) || strings.HasSuffix(tab.FeatureNames[j], " missing") && v != 0 && v != 1 {
					t.Fatalf("row %d: feature %q = %v", i, tab.FeatureNames[j], v)
				}
			}
		}
	})
}
