package main

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// TestSplitsAreThePapers: the sizes of digest §5.6's table (train / validation /
// test): Phishing 6,218 / 2,073 / 2,764 of 11,055; Adult 24,420 / 8,141 / 16,281.
func TestSplitsAreThePapers(t *testing.T) {
	o := options{dataDir: filepath.Join("..", "..", "erm", "data", "testdata"), grid: "smoke"}
	for _, c := range []struct {
		name             string
		train, val, test int
		d                int
	}{
		{"phishing", 6218, 2073, 2764, 68},
		{"adult", 24420, 8141, 16281, 123},
	} {
		tk, err := loadTask(c.name, o)
		if err != nil {
			t.Fatal(err)
		}
		if tk.train.Len() != c.train || tk.val.Len() != c.val || tk.test.Len() != c.test || tk.train.Dim() != c.d || tk.test.Dim() != c.d {
			t.Errorf("%s: %d / %d / %d × %d, want %d / %d / %d × %d", c.name, tk.train.Len(), tk.val.Len(), tk.test.Len(), tk.train.Dim(), c.train, c.val, c.test, c.d)
		}
	}
}

// TestMSDStandIn: unit rows, centred training labels with the sd of the MSD years
// (10.93) within sampling error, and d = 90.
func TestMSDStandIn(t *testing.T) {
	train, val, test := msdStandIn(0.02) // 6,956 / 2,319 / 1,033
	if train.Len() != 6956 || val.Len() != 2319 || test.Len() != 1033 || train.Dim() != 90 {
		t.Fatalf("sizes %d / %d / %d × %d", train.Len(), val.Len(), test.Len(), train.Dim())
	}
	for i := range train.Len() {
		if nrm := floats.Norm(train.X.RawRowView(i), 2); math.Abs(nrm-1) > 1e-12 {
			t.Fatalf("row %d has norm %v", i, nrm)
		}
	}
	n := float64(train.Len())
	mean := floats.Sum(train.Y) / n
	var ss float64
	for _, y := range train.Y {
		ss += (y - mean) * (y - mean)
	}
	if sd := math.Sqrt(ss / n); math.Abs(mean) > 1e-9 || math.Abs(sd-10.93) > 0.05*10.93 {
		t.Errorf("labels: mean %v, sd %v; want 0 and about 10.93", mean, sd)
	}
}

// TestSmokeRun runs the smoke grid on Phishing: a table row per method, and the
// non-private reference above chance.
func TestSmokeRun(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-task", "phishing", "-grid", "smoke", "-seeds", "2", "-tune-seeds", "1", "-eps", "1",
		"-data", filepath.Join("..", "..", "erm", "data", "testdata")}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, m := range []string{"| phishing | dp-scd | 1 |", "| phishing | seq-dp-scd | 1 |", "| phishing | dp-sgd | 1 |", "non-private SDCA"} {
		if !strings.Contains(out.String(), m) {
			t.Errorf("output lacks %q:\n%s", m, out.String())
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-task", "mnist"}, {"-methods", "sgd"}, {"-eps", "0"}, {"-seeds", "2", "-tune-seeds", "3"}, {"-grid", "huge"}, {"-msd-scale", "2"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
