package data

import (
	"strings"
	"testing"
)

func TestReadLIBSVM(t *testing.T) {
	in := `# a comment line
+1 1:0.5 3:-2
-1 2:1e-3   # trailing comment

0 1:1 2:2 3:3
2.5 3:4
`
	ds, err := ReadLIBSVM(strings.NewReader(in), LIBSVMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkRead(t, ds, [][]float64{{0.5, 0, -2}, {0, 1e-3, 0}, {1, 2, 3}, {0, 0, 4}}, []float64{1, -1, 0, 2.5})
	if ds.L2Bound != 0 || ds.L1Bound != 0 {
		t.Errorf("read data must not declare norm bounds, got %v %v", ds.L2Bound, ds.L1Bound)
	}

	ds, err = ReadLIBSVM(strings.NewReader("1 2:1\n"), LIBSVMOptions{Features: 5})
	if err != nil || ds.Dim() != 5 {
		t.Fatalf("Features = 5: dim %d, err %v", ds.Dim(), err)
	}
}

func TestReadLIBSVMErrors(t *testing.T) {
	cases := []struct {
		name, in string
		opts     LIBSVMOptions
		want     string // substring of the error
	}{
		{"empty", "", LIBSVMOptions{}, "no examples"},
		{"only comments", "# x\n\n", LIBSVMOptions{}, "no examples"},
		{"bad label", "1 1:1\nabc 1:2\n", LIBSVMOptions{}, "line 2: label"},
		{"nan label", "NaN 1:2\n", LIBSVMOptions{}, "line 1: label"},
		{"zero index", "1 0:1\n", LIBSVMOptions{}, "line 1: feature index \"0\""},
		{"negative index", "1 -3:1\n", LIBSVMOptions{}, "line 1: feature index"},
		{"no colon", "1 1:1\n1 2\n", LIBSVMOptions{}, "line 2: \"2\" is not index:value"},
		{"bad value", "1 1:x\n", LIBSVMOptions{}, "line 1: value \"x\""},
		{"inf value", "1 1:Inf\n", LIBSVMOptions{}, "not a finite number"},
		{"decreasing", "1 3:1 2:1\n", LIBSVMOptions{}, "line 1: feature index 2 after 3"},
		{"duplicate", "1 2:1 2:1\n", LIBSVMOptions{}, "strictly increasing"},
		{"above Features", "1 4:1\n", LIBSVMOptions{Features: 3}, "exceeds the 3 features"},
		{"huge index", "1 999999999:1\n", LIBSVMOptions{MaxElements: 1000}, "implausibly large"},
		{"too many elements", "1 10:1\n1 1:1\n1 1:1\n", LIBSVMOptions{MaxElements: 25}, "line 3"},
		{"no features", "1\n-1\n", LIBSVMOptions{}, "no features"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadLIBSVM(strings.NewReader(c.in), c.opts)
			checkReadError(t, err, c.want, ErrFormat)
		})
	}
}

// FuzzReadLIBSVM checks that arbitrary input never panics, that an error
// wraps ErrFormat, and that a parsed data set is finite and consistent.
func FuzzReadLIBSVM(f *testing.F) {
	for _, s := range []string{
		"+1 1:0.5 3:-2\n-1 2:1e-3\n",
		"0 1:1 2:2 3:3 # c\n\n2.5 3:4",
		"1 0:1", "1 2:1 1:1", "x", "1 1:NaN", "1 1:", "1 :1", "-1 100:1e308 101:-1e-308",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ds, err := ReadLIBSVM(strings.NewReader(in), LIBSVMOptions{MaxElements: 1 << 16})
		checkFuzzRead(t, ds, err)
	})
}
