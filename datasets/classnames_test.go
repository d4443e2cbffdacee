package datasets

import (
	"slices"
	"strings"
	"testing"
)

// The names of a data set reach the parts of its held-out split, and a dataset that
// does not name every class has no names.
func TestClassNamesThroughHoldOut(t *testing.T) {
	text := "1,dog\n2,cat\n3,dog\n4,cat\n5,emu\n6,emu\n7,dog\n8,cat\n9,emu\n10,dog\n"
	tab := readCSVText(t, text, CSVOptions{Ranges: []Range{{0, 10}}})
	train, test, err := HoldOut(tab, 0.3, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cat", "dog", "emu"} // sorted as text: classes 0, 1, 2
	for _, ds := range []Dataset{tab, train, test} {
		if got := ClassNames(ds); !slices.Equal(got, want) {
			t.Errorf("ClassNames = %q, want %q", got, want)
		}
	}
	m, err := NewImages([]int{1, 1, 1}, 2, []byte{0, 255}, []byte{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ClassNames(m); got != nil {
		t.Errorf("unnamed Images: ClassNames = %q, want nil", got)
	}
	named, err := m.WithClassNames([]string{"off", "on"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ClassNames(named); !slices.Equal(got, []string{"off", "on"}) {
		t.Errorf("named Images: ClassNames = %q", got)
	}
	if ClassNames(m) != nil {
		t.Error("WithClassNames changed the unnamed dataset")
	}
	sub, err := Subset(named, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ClassNames(sub); !slices.Equal(got, []string{"off", "on"}) {
		t.Errorf("subset: ClassNames = %q", got)
	}
	for _, bad := range [][]string{{"off"}, {"off", ""}, {"off", "o\x1b[2Jn"}, {"off", "a\nb"}, {"off", strings.Repeat("x", MaxClassNameLen+1)}, {"off", "\xff"}} {
		if _, err := m.WithClassNames(bad); err == nil {
			t.Errorf("WithClassNames(%q) accepted", bad)
		}
	}
	if _, err := m.WithClassNames([]string{"off", strings.Repeat("é", MaxClassNameLen/2)}); err != nil {
		t.Errorf("a name of %d bytes refused: %v", MaxClassNameLen, err)
	}
}

// Numeric labels that are not the class numbers 0 to K−1 are named in LabelWarning, with
// the line of the first; the labels are read as before.
func TestCSVLabelWarning(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		classes    []string
		want       []string // substrings of the warning; nil: no warning
	}{
		{"classes 0..2", "1,0\n2,1\n3,2\n4,0\n", []string{"0", "1", "2"}, nil},
		{"names", "1,cat\n2,-1\n3,dog\n", []string{"-1", "cat", "dog"}, nil},
		{"negative", "1,0\n2,1\n3,-1\n4,-1\n5,1\n", []string{"-1", "0", "1"},
			[]string{"-1 (first on line 3)", "0=-1, 1=0, 2=1"}},
		{"fractional", "h,y\n1,0.5\n2,1.5\n3,0.5\n4,2\n", []string{"0.5", "1.5", "2"},
			[]string{"0.5, 1.5 (first on line 2)", "is the label column right?"}},
		{"float export", "1,1.0\n2,0.0\n3,1.0\n", []string{"0.0", "1.0"},
			[]string{"1.0, 0.0 (first on line 1)", "0=0.0, 1=1.0"}},
		{"from 1", "1,1\n2,2\n3,3\n", []string{"0", "1", "2", "3"},
			[]string{"no example has label 0", "1 of the 4 classes", "start at 1"}},
		{"gap", "1,0\n2,3\n3,0\n", []string{"0", "1", "2", "3"},
			[]string{"no example has label 1, 2", "2 of the 4 classes"}},
	} {
		tab := readCSVText(t, tc.text, CSVOptions{Ranges: []Range{{0, 10}}})
		if !slices.Equal(tab.ClassNames, tc.classes) {
			t.Errorf("%s: classes %q, want %q", tc.name, tab.ClassNames, tc.classes)
		}
		if tc.want == nil {
			if tab.LabelWarning != "" {
				t.Errorf("%s: unexpected warning %q", tc.name, tab.LabelWarning)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(tab.LabelWarning, w) {
				t.Errorf("%s: warning %q lacks %q", tc.name, tab.LabelWarning, w)
			}
		}
	}
}
