package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
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
	for _, args := range [][]string{{"-task", "mnist"}, {"-methods", "sgd"}, {"-eps", "0"}, {"-seeds", "2", "-tune-seeds", "3"}, {"-grid", "huge"}, {"-msd-scale", "2"},
		{"-task", "adult-uci"}, {"-adult-fit", "mine"}, {"-task", "adult", "-fig2", "x.tsv"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestFiguresSmoke draws Figs. 2 and 3 on a tiny stand-in (n = 1,739): the TSVs are in
// the plot tool's format, Fig. 2 has the five series with epochs 1–50, and every
// suboptimality is > 0 (P* is the exact minimum).
func TestFiguresSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s")
	}
	dir := t.TempDir()
	fig2, fig3 := filepath.Join(dir, "fig2.tsv"), filepath.Join(dir, "fig3.tsv")
	var out, errb bytes.Buffer
	if code := run([]string{"-task", "msd", "-msd-scale", "0.005", "-seeds", "1", "-tune-seeds", "1", "-fig2", fig2, "-fig3", fig3}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, c := range []struct {
		path   string
		series []string
	}{
		{fig2, []string{"SCD (non-private)", "DP-SCD ε = 0.1", "DP-SGD ε = 0.1", "DP-SCD ε = 1", "DP-SGD ε = 1"}},
		{fig3, []string{"C = 0.01", "C = 0.5", "C = 1"}},
	} {
		b, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if lines[0] != "series\tx\tseed\ty" {
			t.Fatalf("%s: header %q", c.path, lines[0])
		}
		count := map[string]int{}
		for _, l := range lines[1:] {
			f := strings.Split(l, "\t")
			if len(f) != 4 {
				t.Fatalf("%s: line %q", c.path, l)
			}
			y, err := strconv.ParseFloat(f[3], 64)
			if err != nil || !(y > 0) {
				t.Fatalf("%s: line %q: y must be > 0", c.path, l)
			}
			count[f[0]]++
		}
		for _, s := range c.series {
			if count[s] == 0 {
				t.Errorf("%s: no %q rows (%v)", c.path, s, count)
			}
		}
		if c.path == fig2 && count["DP-SCD ε = 1"] != 50 {
			t.Errorf("fig2: %d DP-SCD ε = 1 rows, want 50 epochs", count["DP-SCD ε = 1"])
		}
	}
}

// TestAdultUCIRefusesOtherFiles: -task adult-uci reads only UCI's pinned files; a file of
// the right name and format but other bytes is refused before it is parsed.
func TestAdultUCIRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	line := "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n"
	for _, name := range []string{"adult.data", "adult.test"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	code := run([]string{"-task", "adult-uci", "-adult-raw", dir, "-grid", "smoke", "-seeds", "1", "-tune-seeds", "1"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "adult.data") || !strings.Contains(errb.String(), "-fetch") {
		t.Fatalf("exit %d, stderr %q: want 1 and a checksum error naming adult.data and -fetch", code, errb.String())
	}
}
