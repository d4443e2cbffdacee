// Command utilityplot draws series of runs from a TSV: the accuracy-vs-ε figure of
// docs/results/utility.md (issue 14) and the seed papers' curves of docs/results/seeds.md
// (issue 42: error or loss against iterations, beside the paper's read-off points). Each
// series is a line through the mean over seeds at each x, with error bars of ± one sample
// standard deviation (none where a point has a single seed).
//
//	go run ./scripts/utilityplot -in runs.tsv -out utility.svg
//	go run ./scripts/utilityplot -in curves.tsv -out curves.svg -logx=false -logy -xlabel iteration -ylabel 'F(x_t) − F*'
//
// The TSV has four tab-separated columns, series, x, seed, y, one value a line; a first
// line whose last three fields are not numbers is a header (its names then name the
// fields in errors), blank lines and lines starting with # are skipped. A series whose
// name starts with "paper" is drawn as markers only, without a line or bars: the points
// read off a paper's figure. Series with more than 40 points are drawn as lines without
// markers or bars. y is plotted as given (percent or fraction: do not mix). The output
// format follows the extension of -out: .svg or .png. With -logx (the default, for ε)
// x must be > 0, and ticks sit at the data's x values when there are at most 12 of them;
// with -logy y must be > 0. Exit status: 0 success, 1 an unreadable or bad input or an
// unwritable output, 2 bad flags.
package main

import (
	"bufio"
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
	in := fs.String("in", "", "TSV of runs: series, x, seed, y (required)")
	out := fs.String("out", "", "output `FILE`, .svg or .png (required)")
	var o options
	fs.StringVar(&o.title, "title", "Test accuracy vs ε", "plot title")
	fs.StringVar(&o.xlabel, "xlabel", "ε (δ = 1e-5; log scale)", "label of the x axis")
	fs.StringVar(&o.ylabel, "ylabel", "test accuracy (%)", "label of the y axis (\", mean ± sd over seeds\" is added)")
	fs.BoolVar(&o.logX, "logx", true, "log-scale x axis (x > 0)")
	fs.BoolVar(&o.logY, "logy", false, "log-scale y axis (y > 0)")
	fs.StringVar(&o.legend, "legend", "top-left", "legend corner: top-left, top-right, bottom-left or bottom-right")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *in == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "utilityplot: want -in FILE.tsv -out FILE.svg|FILE.png and no arguments")
		return 2
	}
	if _, ok := corners[o.legend]; !ok {
		fmt.Fprintf(stderr, "utilityplot: -legend %q: want top-left, top-right, bottom-left or bottom-right\n", o.legend)
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
	runs, err := parseTSV(f, o)
	if err != nil {
		fmt.Fprintf(stderr, "utilityplot: %s: %v\n", *in, err)
		return 1
	}
	if err := draw(runs, o, *out, format); err != nil {
		fmt.Fprintf(stderr, "utilityplot: %s: %v\n", *out, err)
		return 1
	}
	return 0
}

// options are the plot's flags.
type options struct {
	title, xlabel, ylabel, legend string
	logX, logY                    bool
}

// corners maps -legend to (top, left).
var corners = map[string][2]bool{
	"top-left": {true, true}, "top-right": {true, false},
	"bottom-left": {false, true}, "bottom-right": {false, false},
}

// runs maps series → x → seed → y; methods keeps the order of first appearance.
type runs struct {
	methods []string
	acc     map[string]map[float64]map[int64]float64
}

// parseTSV reads the runs; an error names the line and the field.
func parseTSV(r io.Reader, o options) (*runs, error) {
	res := &runs{acc: map[string]map[float64]map[int64]float64{}}
	names := [4]string{"series", "x", "seed", "y"}
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
			if len(fields) == 4 && isHeader(fields) {
				for j, f := range fields {
					if f = strings.TrimSpace(f); f != "" {
						names[j] = f
					}
				}
				continue
			}
		}
		if len(fields) != 4 {
			return nil, fmt.Errorf("line %d: %d tab-separated fields, want 4 (%s)", n, len(fields), strings.Join(names[:], ", "))
		}
		method := strings.TrimSpace(fields[0])
		if method == "" {
			return nil, fmt.Errorf("line %d: empty %s", n, names[0])
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
		switch {
		case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
			return nil, fmt.Errorf("line %d: %s %q: want a finite number", n, names[1], fields[1])
		case o.logX && !(x > 0):
			return nil, fmt.Errorf("line %d: %s %q: want a number > 0 on a log axis (-logx=false for a linear one)", n, names[1], fields[1])
		}
		seed, err := strconv.ParseInt(strings.TrimSpace(fields[2]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s %q: want an integer", n, names[2], fields[2])
		}
		y, err := strconv.ParseFloat(strings.TrimSpace(fields[3]), 64)
		switch {
		case err != nil || math.IsNaN(y) || math.IsInf(y, 0):
			return nil, fmt.Errorf("line %d: %s %q: want a finite number", n, names[3], fields[3])
		case o.logY && !(y > 0):
			return nil, fmt.Errorf("line %d: %s %q: want a number > 0 on a log axis (-logy)", n, names[3], fields[3])
		}
		if res.acc[method] == nil {
			res.acc[method] = map[float64]map[int64]float64{}
			res.methods = append(res.methods, method)
		}
		if res.acc[method][x] == nil {
			res.acc[method][x] = map[int64]float64{}
		}
		if _, dup := res.acc[method][x][seed]; dup {
			return nil, fmt.Errorf("line %d: %s at %s = %g with %s %d appears twice", n, method, names[1], x, names[2], seed)
		}
		res.acc[method][x][seed] = y
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	if len(res.methods) == 0 {
		return nil, fmt.Errorf("no runs (want lines of %s)", strings.Join(names[:], ", "))
	}
	return res, nil
}

// isHeader says a first line is a header: none of its x, seed and y fields is a number.
func isHeader(fields []string) bool {
	for _, f := range fields[1:] {
		if _, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil {
			return false
		}
	}
	return true
}

// point is one series' mean y at one x and the spread over its seeds.
type point struct{ eps, mean, sd float64 }

// points returns a series' points in increasing x: the mean over the seeds and the
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

// dense is the most points a series draws with markers and error bars.
const dense = 40

// isPaper says a series holds a paper's read-off points (markers only).
func isPaper(method string) bool { return strings.HasPrefix(strings.ToLower(method), "paper") }

func draw(r *runs, o options, path, format string) error {
	p := plot.New()
	p.Title.Text = o.title
	p.X.Label.Text = o.xlabel
	p.Y.Label.Text = o.ylabel + ", mean ± sd over seeds"
	if o.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{}
	}
	if o.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{}
	}
	xs := map[float64]bool{}
	for i, m := range r.methods {
		pts := r.points(m)
		e := errPoints{XYs: make(plotter.XYs, len(pts)), YErrors: make(plotter.YErrors, len(pts))}
		for j, pt := range pts {
			e.XYs[j] = plotter.XY{X: pt.eps, Y: pt.mean}
			e.YErrors[j] = struct{ Low, High float64 }{pt.sd, pt.sd}
			xs[pt.eps] = true
		}
		c := plotutil.Color(i)
		if isPaper(m) {
			scatter, err := plotter.NewScatter(e.XYs)
			if err != nil {
				return fmt.Errorf("series %s: %w", m, err)
			}
			scatter.Color, scatter.Shape, scatter.Radius = c, plotutil.Shape(i), vg.Points(4)
			p.Add(scatter)
			p.Legend.Add(m, scatter)
			continue
		}
		line, err := plotter.NewLine(e.XYs)
		if err != nil {
			return fmt.Errorf("series %s: %w", m, err)
		}
		line.Color = c
		line.Dashes = plotutil.Dashes(i / 7)
		p.Add(line)
		if len(pts) > dense {
			p.Legend.Add(m, line)
			continue
		}
		scatter, err := plotter.NewScatter(e.XYs)
		if err != nil {
			return fmt.Errorf("series %s: %w", m, err)
		}
		scatter.Color, scatter.Shape = c, plotutil.Shape(i)
		bars, err := plotter.NewYErrorBars(e)
		if err != nil {
			return fmt.Errorf("series %s: %w", m, err)
		}
		bars.Color = c
		p.Add(scatter, bars)
		p.Legend.Add(m, line, scatter)
	}
	if o.logX && len(xs) <= 12 {
		var ticks []plot.Tick
		for x := range xs {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
		slices.SortFunc(ticks, func(a, b plot.Tick) int { return compare(a.Value, b.Value) })
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	p.Add(plotter.NewGrid())
	c := corners[o.legend]
	p.Legend.Top, p.Legend.Left = c[0], c[1]
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
