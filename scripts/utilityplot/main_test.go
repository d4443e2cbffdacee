package main

import (
	"bytes"
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
	r, err := parseTSV(strings.NewReader(tinyTSV))
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
		{"a\tone\t1\t80\n", "line 1: epsilon \"one\""},
		{"a\t0\t1\t80\n", "line 1: epsilon"},
		{"a\tNaN\t1\t80\n", "line 1: epsilon"},
		{"a\t1\t1.5\t80\n", "line 1: seed \"1.5\""},
		{"a\t1\t1\t-3\n", "line 1: accuracy"},
		{"a\t1\t1\tInf\n", "line 1: accuracy"},
		{"\ta\t1\t80\t\n", "line 1: 5 tab-separated"},
		{"\t1\t1\t80\n", "line 1: empty method"},
		{"#x\na\t1\t1\t80\na\t1\t1\t81\n", "line 3: a at ε = 1 with seed 1 appears twice"},
		{"method\tepsilon\tseed\taccuracy\n", "no runs"},
		{"", "no runs"},
	} {
		_, err := parseTSV(strings.NewReader(c.in))
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
	for _, args := range [][]string{{"-in", bad}, {"-in", bad, "-out", "x.pdf"}, {"-in", bad, "-out", "x.svg", "extra"}} {
		stderr.Reset()
		if code := run(args, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
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
		r, err := parseTSV(strings.NewReader(in))
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
