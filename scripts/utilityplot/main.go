// Command utilityplot draws test accuracy against ε (the accuracy-vs-ε figure of
// docs/results/utility.md, issue 14) from a TSV of runs, one line per method with the
// mean over seeds at each ε and error bars of ± one sample standard deviation (none
// where a point has a single seed).
//
//	go run ./scripts/utilityplot -in runs.tsv -out utility.svg
//
// The TSV has four tab-separated columns, method, epsilon, seed, accuracy, one run a
// line; a first line "method epsilon seed accuracy" (tab-separated) is a header, blank
// lines and lines starting with # are skipped. Accuracy is plotted as given (percent or
// fraction: do not mix). The output format follows the extension of -out: .svg or .png.
// ε is drawn on a log scale with ticks at the ε values of the data. Exit status: 0
// success, 1 an unreadable or bad input or an unwritable output, 2 bad flags.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/privtrain/privtrain/internal/atomicfile"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("utilityplot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "TSV of runs: method, epsilon, seed, accuracy (required)")
	out := fs.String("out", "", "output `FILE`, .svg or .png (required)")
	title := fs.String("title", "Test accuracy vs ε", "plot title")
	ylabel := fs.String("ylabel", "test accuracy (%)", "label of the accuracy axis")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *in == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "utilityplot: want -in FILE.tsv -out FILE.svg|FILE.png and no arguments")
		return 2
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(*out)), ".")
	if format != "svg" && format != "png" {
		fmt.Fprintf(stderr, "utilityplot: -out %s: want a .svg or .png file name\n", *out)
		return 2
	}
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintf(stderr, "utilityplot: %v\n", err)
		return 1
	}
	defer f.Close()
	runs, err := parseTSV(f)
	if err != nil {
		fmt.Fprintf(stderr, "utilityplot: %s: %v\n", *in, err)
		return 1
	}
	if err := draw(runs, *title, *ylabel, *out, format); err != nil {
		fmt.Fprintf(stderr, "utilityplot: %s: %v\n", *out, err)
		return 1
	}
	return 0
}

// runs maps method → ε → seed → accuracy; methods keeps the order of first appearance.
type runs struct {
	methods []string
	acc     map[string]map[float64]map[int64]float64
}

// parseTSV reads the runs; an error names the line.
func parseTSV(r io.Reader) (*runs, error) {
	res := &runs{acc: map[string]map[float64]map[int64]float64{}}
	sc := bufio.NewScanner(r)
	n, first := 0, true
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if first {
			first = false
			if strings.EqualFold(strings.Join(fields, " "), "method epsilon seed accuracy") {
				continue
			}
		}
		if len(fields) != 4 {
			return nil, fmt.Errorf("line %d: %d tab-separated fields, want 4 (method, epsilon, seed, accuracy)", n, len(fields))
		}
		method := strings.TrimSpace(fields[0])
		if method == "" {
			return nil, fmt.Errorf("line %d: empty method", n)
		}
		eps, err := strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
		if err != nil || !(eps > 0) || math.IsInf(eps, 0) {
			return nil, fmt.Errorf("line %d: epsilon %q: want a finite number > 0", n, fields[1])
		}
		seed, err := strconv.ParseInt(strings.TrimSpace(fields[2]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: seed %q: want an integer", n, fields[2])
		}
		acc, err := strconv.ParseFloat(strings.TrimSpace(fields[3]), 64)
		if err != nil || !(acc >= 0) || math.IsInf(acc, 0) {
			return nil, fmt.Errorf("line %d: accuracy %q: want a finite number ≥ 0", n, fields[3])
		}
		if res.acc[method] == nil {
			res.acc[method] = map[float64]map[int64]float64{}
			res.methods = append(res.methods, method)
		}
		if res.acc[method][eps] == nil {
			res.acc[method][eps] = map[int64]float64{}
		}
		if _, dup := res.acc[method][eps][seed]; dup {
			return nil, fmt.Errorf("line %d: %s at ε = %g with seed %d appears twice", n, method, eps, seed)
		}
		res.acc[method][eps][seed] = acc
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	if len(res.methods) == 0 {
		return nil, errors.New("no runs (want lines of method, epsilon, seed, accuracy)")
	}
	return res, nil
}

// point is one method's mean accuracy at one ε and the spread over its seeds.
type point struct{ eps, mean, sd float64 }

// points returns a method's points in increasing ε: the mean over the seeds and the
// sample standard deviation (0 for one seed).
func (r *runs) points(method string) []point {
	var pts []point
	for eps, bySeed := range r.acc[method] {
		var sum float64
		for _, a := range bySeed {
			sum += a
		}
		mean, ss := sum/float64(len(bySeed)), 0.0
		for _, a := range bySeed {
			ss += (a - mean) * (a - mean)
		}
		sd := 0.0
		if len(bySeed) > 1 {
			sd = math.Sqrt(ss / float64(len(bySeed)-1))
		}
		pts = append(pts, point{eps, mean, sd})
	}
	slices.SortFunc(pts, func(a, b point) int { return compare(a.eps, b.eps) })
	return pts
}

func compare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// errPoints are points with vertical error bars for plotter.NewYErrorBars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

func draw(r *runs, title, ylabel, path, format string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "ε (δ = 1e-5; log scale)"
	p.Y.Label.Text = ylabel + ", mean ± sd over seeds"
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	seen := map[float64]bool{}
	for i, m := range r.methods {
		pts := r.points(m)
		e := errPoints{XYs: make(plotter.XYs, len(pts)), YErrors: make(plotter.YErrors, len(pts))}
		for j, pt := range pts {
			e.XYs[j] = plotter.XY{X: pt.eps, Y: pt.mean}
			e.YErrors[j] = struct{ Low, High float64 }{pt.sd, pt.sd}
			if !seen[pt.eps] {
				seen[pt.eps] = true
				ticks = append(ticks, plot.Tick{Value: pt.eps, Label: strconv.FormatFloat(pt.eps, 'g', -1, 64)})
			}
		}
		line, scatter, err := plotter.NewLinePoints(e.XYs)
		if err != nil {
			return fmt.Errorf("method %s: %w", m, err)
		}
		c := plotutil.Color(i)
		line.Color, scatter.Color = c, c
		scatter.Shape = plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(e)
		if err != nil {
			return fmt.Errorf("method %s: %w", m, err)
		}
		bars.Color = c
		p.Add(line, scatter, bars)
		p.Legend.Add(m, line, scatter)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true // accuracy rises with ε: the top left is free
	p.BackgroundColor = color.White
	wt, err := p.WriterTo(16*vg.Centimeter, 11*vg.Centimeter, format)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}
