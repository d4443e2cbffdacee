package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tinyTSV = "method\tepsilon\tseed\taccuracy\n" +
	"# a comment\n" +
	"dp-sgd\t1\t1\t80\n" +
	"dp-sgd\t1\t2\t82\n" +
	"dp-sgd\t1\t3\t84\n" +
	"dp-sgd\t3\t1\t86.5\n" +
	"\n" +
	"scatter\t3\t1\t89\n" +
	"scatter\t0.5\t1\t70\n" +
	"scatter\t0.5\t2\t72\n"

// TestPoints: the mean and sample standard deviation per ε, by hand: 80, 82, 84 have
// mean 82 and sd √((4+0+4)/2) = 2; one seed has sd 0; points come in increasing ε.
func TestPoints(t *testing.T) {
	r, err := parseTSV(strings.NewReader(tinyTSV), options{logX: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.methods, ",") != "dp-sgd,scatter" {
		t.Errorf("methods %v", r.methods)
	}
	got := r.points("dp-sgd")
	want := []point{{1, 82, 2}, {3, 86.5, 0}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("dp-sgd points %v, want %v", got, want)
	}
	got = r.points("scatter")
	if len(got) != 2 || got[0].eps != 0.5 || got[0].mean != 71 || got[1].eps != 3 {
		t.Errorf("scatter points %v", got)
	}
}

// TestWritesPlots: -out .svg and .png write a file with the format's header.
func TestWritesPlots(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "runs.tsv")
	if err := os.WriteFile(in, []byte(tinyTSV), 0o644); err != nil {
		t.Fatal(err)
	}
	for ext, magic := range map[string]string{".svg": "<svg", ".png": "\x89PNG\r\n\x1a\n"} {
		out := filepath.Join(dir, "utility"+ext)
		var stderr bytes.Buffer
		if code := run([]string{"-in", in, "-out", out}, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", ext, code, stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		head := string(b[:min(len(b), 512)])
		if ext == ".svg" && !strings.Contains(head, magic) || ext == ".png" && !strings.HasPrefix(head, magic) {
			t.Errorf("%s: no %q header in %q", ext, magic, head[:min(len(head), 80)])
		}
		if ext == ".svg" && (!strings.Contains(string(b), "dp-sgd") || !strings.Contains(string(b), "scatter")) {
			t.Errorf("svg does not name both methods in its legend")
		}
	}
}

// TestBadTSV: each bad input is an error naming its line; bad flags exit 2.
func TestBadTSV(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\t1\t1\t80\nb\t1\t1\n", "line 2: 3 tab-separated fields"},
		{"a\t1\t1\t80\na 1 1 80\n", "line 2: 1 tab-separated fields"},
		{"a\tone\t1\t80\n", "line 1: x \"one\": want a finite number"},
		{"method\tepsilon\tseed\taccuracy\na\tone\t1\t80\n", "line 2: epsilon \"one\""},
		{"a\t0\t1\t80\n", "line 1: x \"0\": want a number > 0 on a log axis"},
		{"a\tNaN\t1\t80\n", "line 1: x"},
		{"a\t1\t1.5\t80\n", "line 1: seed \"1.5\""},
		{"a\t1\t1\tInf\n", "line 1: y \"Inf\""},
		{"a\t1\t1\tNaN\n", "line 1: y \"NaN\""},
		{"\ta\t1\t80\t\n", "line 1: 5 tab-separated"},
		{"\t1\t1\t80\n", "line 1: empty series"},
		{"#x\na\t1\t1\t80\na\t1\t1\t81\n", "line 3: a at x = 1 with seed 1 appears twice"},
		{"method\tepsilon\tseed\taccuracy\n", "no runs (want lines of method, epsilon, seed, accuracy)"},
		{"", "no runs"},
	} {
		_, err := parseTSV(strings.NewReader(c.in), options{logX: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tsv")
	if err := os.WriteFile(bad, []byte("a\t1\t1\t80\nb\tx\t1\t80\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-in", bad, "-out", filepath.Join(dir, "o.svg")}, &stderr); code != 1 || !strings.Contains(stderr.String(), "bad.tsv: line 2") {
		t.Errorf("bad TSV: exit %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "o.svg")); err == nil {
		t.Errorf("bad TSV wrote the plot")
	}
	for _, args := range [][]string{{"-in", bad}, {"-in", bad, "-out", "x.pdf"}, {"-in", bad, "-out", "x.svg", "extra"}, {"-in", bad, "-out", "x.svg", "-legend", "middle"}} {
		stderr.Reset()
		if code := run(args, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestAxes: a log axis refuses values ≤ 0 that a linear one takes (iteration 0, a
// negative difference); -logy refuses y ≤ 0.
func TestAxes(t *testing.T) {
	in := "series\titeration\trun\tgap\nDP-GD\t0\t1\t-0.5\nDP-GD\t10\t1\t0.25\n"
	r, err := parseTSV(strings.NewReader(in), options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.points("DP-GD"); len(got) != 2 || got[0] != (point{0, -0.5, 0}) || got[1] != (point{10, 0.25, 0}) {
		t.Errorf("points %v", got)
	}
	if _, err := parseTSV(strings.NewReader(in), options{logX: true}); err == nil || !strings.Contains(err.Error(), "line 2: iteration \"0\"") {
		t.Errorf("log x: %v", err)
	}
	if _, err := parseTSV(strings.NewReader(in), options{logY: true}); err == nil || !strings.Contains(err.Error(), "line 2: gap \"-0.5\"") {
		t.Errorf("log y: %v", err)
	}
}

// TestCurvesPlot: a curve of many iterations on log-log axes with a paper's points
// renders, and both series are in the legend.
func TestCurvesPlot(t *testing.T) {
	var b strings.Builder
	b.WriteString("series\tx\tseed\ty\n")
	for it := 1; it <= 200; it++ {
		for seed := 1; seed <= 3; seed++ {
			fmt.Fprintf(&b, "DP-NAG\t%d\t%d\t%g\n", it, seed, 1/float64(it*seed))
		}
	}
	b.WriteString("paper: DP-NAG\t100\t0\t0.02\n")
	dir := t.TempDir()
	in, out := filepath.Join(dir, "c.tsv"), filepath.Join(dir, "c.svg")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"-in", in, "-out", out, "-logy", "-xlabel", "iteration", "-legend", "top-right"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	svg, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "paper: DP-NAG") || !strings.Contains(string(svg), "iteration") {
		t.Errorf("svg lacks the paper series or the x label")
	}
	if !isPaper("Paper (Fig. 3)") || isPaper("ours vs paper") {
		t.Errorf("isPaper")
	}
}

// FuzzParseTSV: no input panics, and what parses has at least one method with points
// whose ε are positive and increasing.
func FuzzParseTSV(f *testing.F) {
	f.Add(tinyTSV)
	f.Add("a\t1\t1\t80\n")
	f.Add("a\t1e308\t-9\t0\r\n")
	f.Add("method\tepsilon\tseed\taccuracy\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		r, err := parseTSV(strings.NewReader(in), options{logX: true})
		if err != nil {
			return
		}
		if len(r.methods) == 0 {
			t.Fatal("parsed with no methods")
		}
		for _, m := range r.methods {
			pts := r.points(m)
			for i, p := range pts {
				if !(p.eps > 0) || i > 0 && !(p.eps > pts[i-1].eps) || p.sd < 0 {
					t.Fatalf("method %s: points %v", m, pts)
				}
			}
		}
	})
}
