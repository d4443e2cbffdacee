package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/privtrain/privtrain/erm"
	"github.com/privtrain/privtrain/erm/data"
	"github.com/privtrain/privtrain/erm/data/download"
	"github.com/privtrain/privtrain/internal/atomicfile"
)

// loadAdultUCI reads UCI's raw adult.data and adult.test from dir and encodes them as
// the paper does (data.EncodeAdult: 81 features), checking the published record and
// class counts on the way.
func loadAdultUCI(dir string, authors bool) (train, test *data.Dataset, err error) {
	files := download.AdultUCI()
	var tabs [2]*data.AdultTable
	want := [2][2]int{{24720, 7841}, {12435, 3846}} // ≤50K, >50K (adult.names)
	for k, f := range files {
		err := openPinned(dir, f, func(r io.Reader) (err error) {
			tabs[k], err = data.ReadAdult(r, data.AdultOptions{})
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		var pos int
		for _, y := range tabs[k].Labels {
			if y > 0 {
				pos++
			}
		}
		if got := [2]int{len(tabs[k].Labels) - pos, pos}; got != want[k] {
			return nil, nil, fmt.Errorf("%s: %v records ≤50K / >50K, want %v", f.Name, got, want[k])
		}
	}
	train, test, names, err := data.EncodeAdult(tabs[0], tabs[1], data.AdultEncoding{RefitOnTest: authors})
	if err != nil {
		return nil, nil, err
	}
	if len(names) != 81 {
		return nil, nil, fmt.Errorf("adult-uci: %d features, the paper's encoding has 81", len(names))
	}
	return train, test, nil
}

// tsvRows is a results file in the plot tool's format (series, x, seed, y), rewritten
// whole after each finished cell so that a run cut short leaves what it had.
type tsvRows struct{ lines []string }

func (t *tsvRows) add(series string, x float64, seed int, y float64) {
	t.lines = append(t.lines, fmt.Sprintf("%s\t%s\t%d\t%s", series, strconv.FormatFloat(x, 'g', -1, 64), seed, strconv.FormatFloat(y, 'g', 8, 64)))
}

func (t *tsvRows) write(path string) error {
	body := "series\tx\tseed\ty\n" + strings.Join(t.lines, "\n") + "\n"
	return atomicfile.Write(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, body); return err })
}

// fig2Configs are the configurations that Fig. 1's run chose on the MSD stand-in at
// 1/10 of the paper's sizes (docs/results/seeds.md, P4: -msd-scale 0.1 -grid reduced,
// tuned on seed 1), as the paper's Fig. 2 reuses Fig. 1(a)'s choices.
var fig2Configs = []struct {
	method string
	eps    float64
	c      config
}{
	{"dp-scd", 0.1, config{L: 1000, C: 0.01}},
	{"dp-sgd", 0.1, config{L: 1000, C: 1, Step: 1}},
	{"dp-scd", 1, config{L: 1000, C: 0.01}},
	{"dp-sgd", 1, config{L: 100, C: 10, Step: 0.1}},
}

// fig3Ls and fig3Cs are Fig. 3's grid: the paper's L values from 10 to 2000 (a
// subset) and C around both the paper's best (0.5) and the stand-in's (0.01).
var (
	fig3Ls = []int{10, 50, 100, 200, 500, 1000, 2000}
	fig3Cs = []float64{0.01, 0.05, 0.1, 0.5, 1}
)

// runFigures writes Fig. 2 (-fig2) and Fig. 3 (-fig3) for the MSD stand-in.
func runFigures(o options, stderr io.Writer) int {
	tk, err := loadTask("msd", o)
	if err != nil {
		fmt.Fprintln(stderr, "scdrepro:", err)
		return 1
	}
	if o.fig2 != "" {
		if err := tk.fig2(o, stderr); err != nil {
			fmt.Fprintln(stderr, "scdrepro:", err)
			return 1
		}
	}
	if o.fig3 != "" {
		if err := tk.fig3(o, stderr); err != nil {
			fmt.Fprintln(stderr, "scdrepro:", err)
			return 1
		}
	}
	return 0
}

// fig2 records P(θ_e) − P* on the training set after each epoch e of seeds 1..o.seeds
// of each fig2Configs run, and of one run of non-private SCD (exact SDCA); P* is the
// exact minimum (erm.FindOptimum). The non-private curve stops once its gap is
// below 1e-10, where rounding takes over.
func (t *task) fig2(o options, stderr io.Writer) error {
	p := t.problem()
	opt, err := erm.FindOptimum(p)
	if err != nil {
		return err
	}
	var rows tsvRows
	sdca := &erm.SCD{Epsilon: math.Inf(1), Epochs: t.epochs, BatchSize: 1, Clip: math.Inf(1), Sampling: erm.Shuffled,
		Progress: func(e int, x []float64) {
			// Past 1e-10 the difference is rounding (it goes negative): the curve stops.
			if gap := p.Value(x) - opt.Value; gap > 1e-10 {
				rows.add("SCD (non-private)", float64(e), 1, gap)
			}
		}}
	if _, err := sdca.Solve(p, erm.NewNoise(1)); err != nil {
		return err
	}
	for _, fc := range fig2Configs {
		start := time.Now()
		name := map[string]string{"dp-scd": "DP-SCD", "dp-sgd": "DP-SGD"}[fc.method]
		series := fmt.Sprintf("%s ε = %g", name, fc.eps)
		for seed := 1; seed <= o.seeds; seed++ {
			progress := func(e int, x []float64) { rows.add(series, float64(e), seed, p.Value(x)-opt.Value) }
			s := t.solver(fc.method, fc.eps, fc.c)
			switch s := s.(type) {
			case *erm.SCD:
				s.Progress = progress
			case *erm.SCDBaselineSGD:
				s.Progress = progress
			}
			res, err := s.Solve(p, erm.NewNoise(uint64(seed)))
			if err != nil {
				return err
			}
			if res.Epsilon > fc.eps {
				return fmt.Errorf("fig2 %s: spent ε = %v > %v", series, res.Epsilon, fc.eps)
			}
		}
		if err := rows.write(o.fig2); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "fig2 %s %v: %d seeds (%.1fs)\n", series, fc.c, o.seeds, time.Since(start).Seconds())
	}
	return rows.write(o.fig2)
}

// fig3 records DP-SCD's test MSE at ε = 1 for every (C, L) of fig3Cs × fig3Ls, seeds
// 1..o.seeds.
func (t *task) fig3(o options, stderr io.Writer) error {
	var rows tsvRows
	p := t.problem()
	for _, C := range fig3Cs {
		start := time.Now()
		var meds []string
		for _, L := range fig3Ls {
			if L > t.train.Len() {
				continue
			}
			var test []float64
			for seed := 1; seed <= o.seeds; seed++ {
				res, err := t.solver("dp-scd", 1, config{L: L, C: C}).Solve(p, erm.NewNoise(uint64(seed)))
				if err != nil {
					return err
				}
				if res.Epsilon > 1 {
					return fmt.Errorf("fig3 L = %d, C = %g: spent ε = %v > 1", L, C, res.Epsilon)
				}
				v := t.score(t.test, res.X)
				test = append(test, v)
				rows.add(fmt.Sprintf("C = %g", C), float64(L), seed, v)
			}
			meds = append(meds, fmt.Sprintf("L=%d %.4g", L, median(test)))
			if err := rows.write(o.fig3); err != nil {
				return err
			}
		}
		fmt.Fprintf(stderr, "fig3 C = %g: %s (%.1fs)\n", C, strings.Join(meds, ", "), time.Since(start).Seconds())
	}
	return nil
}
