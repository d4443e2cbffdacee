// Command scdrepro runs the experiments of the DP-SCD paper (Damaskinos et al., Sec. 5
// and App. E; digest §5.6) for docs/results/seeds.md: DP-SCD, seqDP-SCD and the
// DP-SGD baseline on Phishing (logistic, 10 epochs, λ = 1e-4), Adult (hinge, 10 epochs,
// λ = 1e-5) and a synthetic stand-in for YearPredictionMSD (ridge, 50 epochs,
// λ = 1e-4), at ε ∈ {0.1, 0.5, 1, 2}, δ = 1e-3.
//
//	nice -n 10 go run ./scripts/scdrepro -task phishing,adult -out scd.md
//
// Protocol, as in the paper: every method's hyper-parameters are chosen on a validation
// set (a random 25 % of the training file) and the test metric of the chosen
// configuration is reported as the median over -seeds seeds, with its range. Here a
// configuration's validation score is the median over the first -tune-seeds seeds (the
// paper does not say over how many), and the grids are subsets of the paper's (see
// grids). The validation set is part of the private data: the choice of
// hyper-parameters is not covered by ε, in the paper as here.
//
// Data: -data DIR holds LIBSVM's phishing, a9a and a9a.t, gzipped or not (default: the
// copies in erm/data/testdata); each is checked against the SHA-256 pinned in
// erm/data/download, which also fetches them (-fetch). Preprocessing as in the paper:
// each feature divided by its largest absolute value, then each example scaled to unit
// L2 norm (data-dependent, not private, in the paper as here). -task adult is LIBSVM's
// binarisation (123 features); -task adult-uci is the paper's own encoding (81
// features, data.EncodeAdult, as the authors' preprocessor) of UCI's raw adult.data
// and adult.test in -adult-raw DIR (pinned by SHA-256; -fetch downloads them from
// download.UCIAdult), split 24,420 / 8,141 like adult.
//
// -fig2 FILE and -fig3 FILE (with -task msd) write the paper's Figs. 2 and 3 on the
// stand-in instead of the table: the primal suboptimality P(θ) − P* after each epoch of
// the configurations Fig. 1 chose (ε = 0.1 and 1, seeds 1..-seeds), and DP-SCD's test
// MSE at ε = 1 against L for several C. -tsv FILE writes the table's per-seed test
// scores. All three are in scripts/utilityplot's format (series, x, seed, y).
//
// The MSD stand-in: n = 347,786 / 115,929 / 51,630 train / validation / test examples
// of d = 90 standard normal features (scaled -msd-scale), normalised as above, with
// labels y = s·xᵀw* + e, w* standard normal, s and the sd of e set so that the labels
// have the sd of the MSD years (10.93) and the best linear model explains 24 % of their
// variance (a linear fit of the real years reaches about that); labels are centred.
package main

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm"
	"github.com/privtrain/privtrain/erm/data"
	"github.com/privtrain/privtrain/erm/data/download"
	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/privrand"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	tasks     []string
	methods   []string
	eps       []float64
	seeds     int
	tuneSeeds int
	dataDir   string
	fetch     bool
	msdScale  float64
	out       string
	grid      string
	adultRaw  string
	adultFit  string
	tsv       string
	fig2      string
	fig3      string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scdrepro", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	tasks := fs.String("task", "phishing,adult,msd", "comma-separated tasks: phishing, adult (LIBSVM's a9a, 123 features), adult-uci (UCI's raw files in the paper's 81-feature encoding; needs -adult-raw), msd")
	methods := fs.String("methods", "dp-scd,seq-dp-scd,dp-sgd", "comma-separated methods: dp-scd, seq-dp-scd, dp-sgd")
	eps := fs.String("eps", "0.1,0.5,1,2", "comma-separated ε values (δ = 1e-3)")
	fs.IntVar(&o.seeds, "seeds", 10, "seeds 1..N of the reported runs of each chosen configuration")
	fs.IntVar(&o.tuneSeeds, "tune-seeds", 3, "seeds 1..N whose median validation score ranks a configuration")
	fs.StringVar(&o.dataDir, "data", filepath.Join("erm", "data", "testdata"), "`DIR` with LIBSVM's phishing, a9a, a9a.t (optionally .gz)")
	fs.BoolVar(&o.fetch, "fetch", false, "download the LIBSVM files into -data first (checked against pinned SHA-256s)")
	fs.Float64Var(&o.msdScale, "msd-scale", 1, "fraction of the MSD sizes (347,786 / 115,929 / 51,630) the stand-in draws")
	fs.StringVar(&o.out, "out", "", "write the markdown table to `FILE` (atomically) as well as to stdout")
	fs.StringVar(&o.adultRaw, "adult-raw", "", "`DIR` with UCI's raw adult.data and adult.test (optionally .gz; checked against pinned SHA-256s; -fetch downloads them) for -task adult-uci")
	fs.StringVar(&o.adultFit, "adult-fit", "authors", "statistics of adult-uci's test-file standardisation and imputation: authors (the test file's own, as the authors' preprocessor) or train")
	fs.StringVar(&o.tsv, "tsv", "", "write every reported run's test score to `FILE` (series, ε, seed, score; rewritten atomically as each cell finishes)")
	fs.StringVar(&o.fig2, "fig2", "", "instead of the table, write the paper's Fig. 2 (primal suboptimality P(θ) − P* after each epoch, MSD stand-in, ε = 0.1 and 1, the configurations Fig. 1 chose) to `FILE`")
	fs.StringVar(&o.fig3, "fig3", "", "instead of the table, write the paper's Fig. 3 (DP-SCD test MSE against L for several C, MSD stand-in, ε = 1) to `FILE`")
	fs.StringVar(&o.grid, "grid", "default", "grids: default (subsets of the paper's), wide (default and its edges' neighbours), reduced (fewer points, for the MSD stand-in's cost) or smoke (one point per method)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.tasks = splitList(*tasks)
	o.methods = splitList(*methods)
	for _, t := range o.tasks {
		if !slices.Contains([]string{"phishing", "adult", "adult-uci", "msd"}, t) {
			fmt.Fprintf(stderr, "scdrepro: -task %q: want phishing, adult, adult-uci or msd\n", t)
			return 2
		}
	}
	for _, m := range o.methods {
		if !slices.Contains([]string{"dp-scd", "seq-dp-scd", "dp-sgd"}, m) {
			fmt.Fprintf(stderr, "scdrepro: -methods %q: want dp-scd, seq-dp-scd or dp-sgd\n", m)
			return 2
		}
	}
	for _, s := range splitList(*eps) {
		e, err := strconv.ParseFloat(s, 64)
		if err != nil || !(e > 0) || math.IsInf(e, 0) {
			fmt.Fprintf(stderr, "scdrepro: -eps %q: want finite numbers > 0\n", s)
			return 2
		}
		o.eps = append(o.eps, e)
	}
	if !slices.Contains([]string{"default", "wide", "reduced", "smoke"}, o.grid) {
		fmt.Fprintf(stderr, "scdrepro: -grid %q: want default, wide, reduced or smoke\n", o.grid)
		return 2
	}
	if o.seeds < 1 || o.tuneSeeds < 1 || o.tuneSeeds > o.seeds || !(o.msdScale > 0 && o.msdScale <= 1) || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "scdrepro: want -seeds ≥ -tune-seeds ≥ 1, -msd-scale in (0, 1] and no arguments")
		return 2
	}
	if o.adultFit != "authors" && o.adultFit != "train" {
		fmt.Fprintf(stderr, "scdrepro: -adult-fit %q: want authors or train\n", o.adultFit)
		return 2
	}
	if slices.Contains(o.tasks, "adult-uci") && o.adultRaw == "" {
		fmt.Fprintf(stderr, "scdrepro: -task adult-uci needs -adult-raw DIR holding UCI's adult.data and adult.test (-fetch downloads them from %s)\n", download.UCIAdult)
		return 2
	}
	if (o.fig2 != "" || o.fig3 != "") && !slices.Equal(o.tasks, []string{"msd"}) {
		fmt.Fprintln(stderr, "scdrepro: -fig2 and -fig3 plot the MSD stand-in: use them with -task msd")
		return 2
	}
	if o.fetch {
		if err := download.Fetch(context.Background(), o.dataDir, download.Files()); err != nil {
			fmt.Fprintln(stderr, "scdrepro:", err)
			return 1
		}
		if o.adultRaw != "" {
			if err := download.Fetch(context.Background(), o.adultRaw, download.AdultUCI(), download.WithBaseURL(download.UCIAdult)); err != nil {
				fmt.Fprintln(stderr, "scdrepro:", err)
				return 1
			}
		}
	}
	if o.fig2 != "" || o.fig3 != "" {
		return runFigures(o, stderr)
	}
	var rows tsvRows
	var b strings.Builder
	fmt.Fprintf(&b, "| task | method | ε | chosen (validation) | val. median | test median [min, max], %d seeds | σ |\n| --- | --- | --- | --- | --- | --- | --- |\n", o.seeds)
	for _, task := range o.tasks {
		t0 := time.Now()
		tk, err := loadTask(task, o)
		if err != nil {
			fmt.Fprintln(stderr, "scdrepro:", err)
			return 1
		}
		fmt.Fprintf(stderr, "%s: train %d, val %d, test %d, d = %d (%.1fs)\n", task, tk.train.Len(), tk.val.Len(), tk.test.Len(), tk.train.Dim(), time.Since(t0).Seconds())
		ref := tk.reference()
		fmt.Fprintf(&b, "| %s | non-private SDCA (ε = ∞) | ∞ | %s | %s | %s | 0 |\n", task, tk.refNote, tk.format(tk.score(tk.val, ref)), tk.format(tk.score(tk.test, ref)))
		for _, e := range o.eps {
			for _, m := range o.methods {
				row, test, err := tk.tuneAndReport(m, e, o, stderr)
				if err != nil {
					fmt.Fprintln(stderr, "scdrepro:", err)
					return 1
				}
				if o.tsv != "" {
					for s, v := range test {
						rows.add(task+" "+m, e, s+1, v)
					}
					if err := rows.write(o.tsv); err != nil {
						fmt.Fprintln(stderr, "scdrepro:", err)
						return 1
					}
				}
				fmt.Fprintf(&b, "| %s | %s | %g | %s |\n", task, m, e, row)
			}
		}
	}
	fmt.Fprint(stdout, b.String())
	if o.out != "" {
		if err := atomicfile.Write(o.out, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, b.String()); return err }); err != nil {
			fmt.Fprintln(stderr, "scdrepro:", err)
			return 1
		}
	}
	return 0
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// task is one of the paper's three problems with its split and grids.
type task struct {
	name             string
	loss             erm.Loss
	lambda           float64
	epochs           int
	train, val, test *data.Dataset
	regression       bool
	refNote          string
	scdGrid, sgdGrid []config
}

// config is one point of a grid: L and C (and η for DP-SGD).
type config struct {
	L    int
	C    float64
	Step float64
}

func (c config) String() string {
	if c.Step > 0 {
		return fmt.Sprintf("L = %d, C = %g, η = %g", c.L, c.C, c.Step)
	}
	return fmt.Sprintf("L = %d, C = %g", c.L, c.C)
}

// grids are subsets of the paper's (C, η ∈ {1e-8, …, 1e4}; L ∈ {5, 10, 50, 100, 200,
// 500, 1000, 1250, …, 2000}): the values of C where clipping can bind (|ζ| ≤ 1 for the
// classification duals, gradients of unit-norm examples), the batch sizes that span the
// noise/steps trade-off, and the steps around the ones that converge.
//
// default: DP-SCD and seqDP-SCD L ∈ {10, 100, 500, 1000, 2000} × C ∈ {1e-3, …, 1}
// (and 10 for ridge), 20 (25) points of the paper's 156; DP-SGD L ∈ {100, 500, 2000} ×
// C ∈ {1e-2, 1e-1, 1} (and 10) × η ∈ {1e-2, …, 100}, 45 (60) of 2,028. reduced: L ∈
// {100, 1000} × C ∈ {1e-2, …, 10}, 8 points, and DP-SGD L ∈ {100, 1000} × C ∈ {0.1,
// 1, 10} × η ∈ {0.1, 1, 10}, 18 points. wide: default plus L = 5, C ∈ {1e-5, 1e-4}
// and η ∈ {1e3, 1e4}, to check choices at the default grid's edges.
func grids(regression bool, which string) (scd, sgd []config) {
	Ls := []int{10, 100, 500, 1000, 2000}
	Cs := []float64{1e-3, 1e-2, 1e-1, 1}
	etas := []float64{1e-2, 1e-1, 1, 10, 100}
	sgdLs := []int{100, 500, 2000}
	sgdCs := []float64{1e-2, 1e-1, 1}
	if regression {
		Cs = append(Cs, 10)
		sgdCs = append(sgdCs, 10)
	}
	switch which {
	case "smoke":
		return []config{{L: 100, C: 0.1}}, []config{{L: 100, C: 1, Step: 1}}
	case "wide":
		Ls = append([]int{5}, Ls...)
		Cs = append([]float64{1e-5, 1e-4}, Cs...)
		etas = append(etas, 1e3, 1e4)
	case "reduced":
		Ls, Cs = []int{100, 1000}, []float64{1e-2, 1e-1, 1, 10}
		sgdLs, sgdCs, etas = []int{100, 1000}, []float64{0.1, 1, 10}, []float64{0.1, 1, 10}
	}
	for _, L := range Ls {
		for _, C := range Cs {
			scd = append(scd, config{L: L, C: C})
		}
	}
	for _, L := range sgdLs {
		for _, C := range sgdCs {
			for _, eta := range etas {
				sgd = append(sgd, config{L: L, C: C, Step: eta})
			}
		}
	}
	return scd, sgd
}

// splitSeed fixes the train/validation/test split of every task (not the noise).
const splitSeed = 2020

func loadTask(name string, o options) (*task, error) {
	t := &task{name: name}
	var all *data.Dataset
	var err error
	switch name {
	case "phishing":
		t.loss, t.lambda, t.epochs = erm.Logistic{}, 1e-4, 10
		if all, err = readPinned(o.dataDir, download.Phishing()[0], 68); err != nil {
			return nil, err
		}
		if err := all.BinaryLabels(); err != nil {
			return nil, err
		}
		all.Normalize()
		// 75/25 train/test, then 25 % of train for validation: 6,218 / 2,073 / 2,764.
		rest, test := split(all, 0.25, 1)
		t.train, t.val = split(rest, 0.25, 2)
		t.test = test
	case "adult":
		t.loss, t.lambda, t.epochs = erm.Hinge{}, 1e-5, 10
		files := download.Adult()
		tr, err := readPinned(o.dataDir, files[0], 123)
		if err != nil {
			return nil, err
		}
		te, err := readPinned(o.dataDir, files[1], 123)
		if err != nil {
			return nil, err
		}
		for _, ds := range []*data.Dataset{tr, te} {
			if err := ds.BinaryLabels(); err != nil {
				return nil, err
			}
			ds.Normalize() // binary features: max-abs 1 in both files
		}
		t.train, t.val = split(tr, 0.25, 2) // 24,420 / 8,141
		t.test = te
	case "adult-uci":
		t.loss, t.lambda, t.epochs = erm.Hinge{}, 1e-5, 10
		tr, te, err := loadAdultUCI(o.adultRaw, o.adultFit == "authors")
		if err != nil {
			return nil, err
		}
		t.train, t.val = split(tr, 0.25, 2) // 24,420 / 8,141
		t.test = te
	case "msd":
		t.loss, t.lambda, t.epochs, t.regression = erm.Squared{}, 1e-4, 50, true
		t.train, t.val, t.test = msdStandIn(o.msdScale)
	}
	t.scdGrid, t.sgdGrid = grids(t.regression, o.grid)
	return t, nil
}

// readPinned reads f from dir (f.Name or f.Name+".gz"), refusing it unless it matches
// the pinned digest.
func readPinned(dir string, f download.RemoteFile, features int) (*data.Dataset, error) {
	var ds *data.Dataset
	err := openPinned(dir, f, func(r io.Reader) (err error) {
		ds, err = data.ReadLIBSVM(r, data.LIBSVMOptions{Features: features})
		return err
	})
	return ds, err
}

// openPinned opens f in dir (f.Name or f.Name+".gz"), checks it against the pinned
// digest, and passes its (decompressed) text to read.
func openPinned(dir string, f download.RemoteFile, read func(io.Reader) error) error {
	path := filepath.Join(dir, f.Name)
	if _, err := os.Stat(path); err != nil {
		path += ".gz"
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no %s or %s.gz in %s (fetch the canonical file with -fetch)", f.Name, f.Name, dir)
		}
	}
	if err := download.Verify(path, f); err != nil {
		return fmt.Errorf("%w (fetch the canonical file with -fetch)", err)
	}
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	var r io.Reader = file
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(file)
		if err != nil {
			return err
		}
		defer zr.Close()
		r = zr
	}
	if err := read(r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// split returns a random (1−frac, frac) split of ds, drawn from the ValidationSplit
// stream of splitSeed+k.
func split(ds *data.Dataset, frac float64, k uint64) (*data.Dataset, *data.Dataset) {
	perm := privrand.NewSeeded(splitSeed+k, privrand.ValidationSplit).Rand().Perm(ds.Len())
	m := int(math.Ceil(frac * float64(ds.Len()))) // 6,218 / 2,073 / 2,764 and 24,420 / 8,141 as in the paper
	held := slices.Clone(perm[:m])
	kept := slices.Clone(perm[m:])
	slices.Sort(held)
	slices.Sort(kept)
	return ds.Subset(kept), ds.Subset(held)
}

// msdStandIn draws the synthetic YearPredictionMSD (see the package comment).
func msdStandIn(scale float64) (train, val, test *data.Dataset) {
	const d, labelSD, r2 = 90, 10.93, 0.24
	sizes := []int{347786, 115929, 51630}
	rng := privrand.NewSeeded(splitSeed, privrand.SyntheticData).Rand()
	w := make([]float64, d)
	for j := range w {
		w[j] = rng.NormFloat64()
	}
	var out []*data.Dataset
	for _, n := range sizes {
		n = max(1, int(math.Round(scale*float64(n))))
		x := mat.NewDense(n, d, nil)
		for i := range n {
			row := x.RawRowView(i)
			for j := range row {
				row[j] = rng.NormFloat64()
			}
		}
		out = append(out, &data.Dataset{X: x, Y: make([]float64, n)})
	}
	// Each set is normalised by itself, as the paper treats each file.
	for _, ds := range out {
		ds.Normalize()
	}
	// xᵀw* has variance ‖w*‖²/d on unit rows of a spherical distribution.
	signalSD := math.Sqrt(r2) * labelSD
	s := signalSD / (floats.Norm(w, 2) / math.Sqrt(d))
	noiseSD := math.Sqrt(1-r2) * labelSD
	for _, ds := range out {
		for i := range ds.Y {
			ds.Y[i] = s*floats.Dot(ds.X.RawRowView(i), w) + noiseSD*rng.NormFloat64()
		}
	}
	mean := out[0].CenterLabels()
	for _, ds := range out[1:] {
		for i := range ds.Y {
			ds.Y[i] -= mean
		}
	}
	return out[0], out[1], out[2]
}

func (t *task) problem() *erm.Problem {
	return &erm.Problem{Data: t.train, Loss: t.loss, Lambda: t.lambda}
}

// score is test accuracy in percent (classification) or MSE (regression).
func (t *task) score(ds *data.Dataset, theta []float64) float64 {
	var acc float64
	for i := range ds.Len() {
		z := floats.Dot(ds.X.RawRowView(i), theta)
		if t.regression {
			acc += (z - ds.Y[i]) * (z - ds.Y[i])
		} else if (z >= 0) == (ds.Y[i] > 0) {
			acc++
		}
	}
	acc /= float64(ds.Len())
	if !t.regression {
		acc *= 100
	}
	return acc
}

// better reports whether score a beats b.
func (t *task) better(a, b float64) bool {
	if math.IsNaN(b) {
		return !math.IsNaN(a)
	}
	if t.regression {
		return a < b
	}
	return a > b
}

func (t *task) format(v float64) string {
	if t.regression {
		return fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprintf("%.2f %%", v)
}

// reference trains the non-private model by exact SDCA (one coordinate a round).
func (t *task) reference() []float64 {
	s := &erm.SCD{Epsilon: math.Inf(1), Epochs: t.epochs, BatchSize: 1, Clip: math.Inf(1), Sampling: erm.Shuffled}
	t.refNote = fmt.Sprintf("SDCA, %d epochs", t.epochs)
	res, err := s.Solve(t.problem(), erm.NewNoise(1))
	if err != nil {
		panic(err) // not reachable: the settings are fixed and valid
	}
	return res.X
}

func (t *task) solver(method string, eps float64, c config) erm.Solver {
	const delta = 1e-3
	switch method {
	case "dp-scd":
		return &erm.SCD{Epsilon: eps, Delta: delta, Epochs: t.epochs, BatchSize: c.L, Clip: c.C, NewtonSteps: 1}
	case "seq-dp-scd":
		return &erm.SequentialSCD{Epsilon: eps, Delta: delta, Epochs: t.epochs, BatchSize: c.L, Clip: c.C, NewtonSteps: 1}
	default:
		return &erm.SCDBaselineSGD{Epsilon: eps, Delta: delta, Epochs: t.epochs, BatchSize: c.L, Clip: c.C, Step: c.Step}
	}
}

// runs trains config c with seeds 1..n and returns the validation and test scores.
func (t *task) runs(method string, eps float64, c config, n int) (val, test []float64, calib string, err error) {
	p := t.problem()
	for seed := 1; seed <= n; seed++ {
		res, err := t.solver(method, eps, c).Solve(p, erm.NewNoise(uint64(seed)))
		if err != nil {
			return nil, nil, "", fmt.Errorf("%s %s ε = %g %v: %w", t.name, method, eps, c, err)
		}
		if res.Epsilon > eps {
			return nil, nil, "", fmt.Errorf("%s %s: spent ε = %v > %v", t.name, method, res.Epsilon, eps)
		}
		val = append(val, t.score(t.val, res.X))
		test = append(test, t.score(t.test, res.X))
		calib = res.Calibration
	}
	return val, test, calib, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.SortFunc(s, func(a, b float64) int {
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
			return 0
		case math.IsNaN(a):
			return 1
		case math.IsNaN(b):
			return -1
		}
		if a < b {
			return -1
		} else if a > b {
			return 1
		}
		return 0
	})
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// tuneAndReport picks the configuration with the best median validation score over
// the tuning seeds and reports its test scores over all seeds.
func (t *task) tuneAndReport(method string, eps float64, o options, stderr io.Writer) (string, []float64, error) {
	grid := t.scdGrid
	if method == "dp-sgd" {
		grid = t.sgdGrid
	}
	start := time.Now()
	best, bestScore := config{}, math.NaN()
	for _, c := range grid {
		if c.L > t.train.Len() {
			continue
		}
		val, _, _, err := t.runs(method, eps, c, o.tuneSeeds)
		if err != nil {
			return "", nil, err
		}
		if m := median(val); t.better(m, bestScore) {
			best, bestScore = c, m
		}
	}
	if math.IsNaN(bestScore) {
		return "", nil, errors.New("no configuration of the grid fits the training set")
	}
	val, test, calib, err := t.runs(method, eps, best, o.seeds)
	if err != nil {
		return "", nil, err
	}
	sigma := calib
	if i := strings.Index(calib, "(σ = "); i >= 0 {
		sigma = strings.SplitN(calib[i+len("(σ = "):], ",", 2)[0]
	}
	fmt.Fprintf(stderr, "%s %s ε = %g: %d configs, best %v, test median %s (%.1fs)\n", t.name, method, eps, len(grid), best, t.format(median(test)), time.Since(start).Seconds())
	return fmt.Sprintf("%v | %s | %s [%s, %s] | %s", best, t.format(median(val)), t.format(median(test)),
		t.format(slices.Min(test)), t.format(slices.Max(test)), sigma), test, nil
}
