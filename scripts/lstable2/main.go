// Command lstable2 reruns the setting of Table 2 of the DP-LSSGD paper (Wang, Gu,
// Boedihardjo, Barekat, Osher; seeds digest §1.6 a) with privtrain: softmax regression
// 784 → 10, batch 128, 50 epochs, step size a/t with t the iteration count at the start
// of each epoch (the authors' code: lr = a/iter_count once per epoch, iter_count starting
// at 1, so epoch e runs at a/(1 + e·⌈n/128⌉)), and for each ε column of the table the
// authors' Gaussian noise std on the mean gradient (0.1162 … 0.3471, digest §1.4), which
// is the noise multiplier z = std·128 for per-example clipping at C = 1. For every ε and
// seed it trains DP-SGD (σ = 0) and DP-LSSGD with σ = -sigma smoothing dense weights along
// their inputs (the authors' [out, in] order) and in storage order ("flat", [in, out]: along
// the classes of one input). cmd/train cannot express the per-epoch a/t rule, hence this
// program. One line per run on stdout (tab-separated), progress on stderr.
//
//	nice -n 10 go run ./scripts/lstable2 -dataset fashion-mnist -seeds 1,2
//
// The paper's own regime (issue 25; docs/results/seeds.md, P0 section) adds what the
// authors' code does beyond that: input normalisation with MNIST's mean 0.1307 and std
// 0.3081 (-normalize), weight decay 1e-4·w added to the smoothed noisy gradient, neither
// noised nor smoothed (-weight-decay 1e-4; it reads only the released parameters, so it
// is post-processing), the four σ rows of Table 2 (-sigmas 0,1,2,3: σ = 0 is DP-SGD, the
// others the "input" variant), and either the authors' noise stds (-noise authors) or z
// calibrated by privtrain's accountant so that the ε printed is at most the column's
// (-noise calibrate), with Poisson sampling so that the printed ε is an upper bound:
//
//	nice -n 10 go run ./scripts/lstable2 -dataset mnist -normalize -weight-decay 1e-4 \
//	    -sigmas 0,1,2,3 -noise calibrate -sampling poisson -seeds 1,2,3
//
// -a sets the step's a (the paper's Fig. 4 sweeps 0.5 … 3), and -curves FILE appends the
// training and test loss after every epoch of each run (the paper's Figs. 1 and 3;
// scripts/p0seeds runs both).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/smoothing"
	"github.com/privtrain/privtrain/training"
)

// paperStd is the Gaussian noise std on the mean gradient that the authors' code uses for
// each ε column of Table 2 (Logistic-Regression/Logistic_NonconstantLR_*.py; digest §1.4).
var paperStd = map[string]float64{"0.30": 0.1162, "0.25": 0.1393, "0.20": 0.1739, "0.15": 0.2316, "0.10": 0.3471}

// epochInverseTime is the authors' step size: a/(1 + stepsPerEpoch·epoch) for every step
// of an epoch.
type epochInverseTime struct {
	a             float64
	stepsPerEpoch int
}

func (s epochInverseTime) Rate(t int) float64 {
	return s.a / float64(1+s.stepsPerEpoch*(t/s.stepsPerEpoch))
}

// weightDecay adds wd·w to the gradient estimate before the wrapped rule's step: the
// authors' L2 regularisation 1e-4, applied after the smoothing, neither noised nor smoothed
// (digest §1.3). It reads only the parameters, which earlier steps have released.
type weightDecay struct {
	dpoptim.Rule
	wd  float64
	buf []float64
}

func (w *weightDecay) Step(params, grad []float64) error {
	w.buf = append(w.buf[:0], grad...)
	for i, p := range params {
		w.buf[i] += w.wd * p
	}
	return w.Rule.Step(params, w.buf)
}

// normalize is (x − 0.1307)/0.3081 on every pixel, the authors' transforms.Normalize.
func normalize(ds datasets.Dataset) (datasets.Dataset, error) {
	return datasets.Transform(context.Background(), ds, ds.Shape(), func(x []float32) ([]float32, error) {
		for i, v := range x {
			x[i] = (v - 0.1307) / 0.3081
		}
		return x, nil
	})
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lstable2:", err)
		os.Exit(1)
	}
}

func run() error {
	dataset := flag.String("dataset", "fashion-mnist", "data set (as cmd/train -dataset)")
	data := flag.String("data", "", "data directory (as cmd/train -data)")
	epsList := flag.String("eps", "0.30,0.25,0.20,0.15,0.10", "the ε columns of Table 2 to run")
	seedList := flag.String("seeds", "1,2", "seeds")
	variants := flag.String("variants", "dp-sgd,input,flat", "dp-sgd (σ = 0), input (σ along the inputs), flat (σ in storage order)")
	sigma := flag.Float64("sigma", 1, "Laplacian smoothing σ of the input and flat variants")
	a := flag.Float64("a", 2, "step size a of a/t")
	epochs := flag.Int("epochs", 50, "epochs")
	batch := flag.Int("batch", 128, "batch size")
	sampling := flag.String("sampling", "shuffle", "shuffle (the authors' DataLoader) or poisson (the sampling the printed ε assumes)")
	sigmas := flag.String("sigmas", "", "σ rows to run instead of -variants/-sigma: 0 is DP-SGD, σ > 0 DP-LSSGD along the inputs (Table 2: 0,1,2,3)")
	norm := flag.Bool("normalize", false, "normalise pixels with mean 0.1307 and std 0.3081 (the authors' code)")
	wd := flag.Float64("weight-decay", 0, "add this times w to the smoothed noisy gradient (the authors' 1e-4)")
	noiseMode := flag.String("noise", "authors", "authors (z = the authors' std × batch) or calibrate (z such that privtrain's ε ≤ the column's ε at δ = 1e-5)")
	clipMode := flag.String("clip", "per-example", "per-example (the paper: each example's gradient clipped to 1, privtrain's trainer) or batch-mean (the authors' code: the batch's mean gradient clipped to 1 per tensor; own loop, ε from sensitivity 2√2: see batchmean.go)")
	avgIter := flag.String("average-iterates", "", "uniform or step: evaluate DP-LSSGD's averaged output θ̃ (dpoptim.IterateAverage; Theorem 3 / Theorem 2 with the a/t step as weights) instead of the last iterate; variants get the suffix +avg-uniform / +avg-step")
	curves := flag.String("curves", "", "append one line per epoch of every per-example run to this file (tab-separated: eps_column, z, variant, sigma, seed, a, epoch, step, train_loss, test_loss, test_accuracy): the loss curves of the paper's Fig. 3. The training loss is the mean cross-entropy over the examples each epoch's steps sampled, measured by the step that trained on them, before clipping and noise: not private, for the plot only")
	maxOrder := flag.Int("max-order", 0, "RDP orders up to this (0: the library's default, up to 63, whose ε floor at δ = 1e-5 is about 0.10; the ε = 0.10 column needs more, e.g. 1024)")
	flag.Parse()
	var acc []accountant.Option
	if *maxOrder > 0 {
		acc = append(acc, accountant.WithOrders(accountant.OrdersUpTo(*maxOrder)))
	}
	if *clipMode != "per-example" && *clipMode != "batch-mean" {
		return fmt.Errorf("-clip %q: want per-example or batch-mean", *clipMode)
	}
	if *avgIter != "" && *avgIter != "uniform" && *avgIter != "step" {
		return fmt.Errorf("-average-iterates %q: want uniform or step", *avgIter)
	}
	if *avgIter != "" && *clipMode == "batch-mean" {
		return fmt.Errorf("-average-iterates: only with -clip per-example")
	}
	if *curves != "" && *clipMode == "batch-mean" {
		return fmt.Errorf("-curves: only with -clip per-example")
	}
	if *noiseMode != "authors" && *noiseMode != "calibrate" {
		return fmt.Errorf("-noise %q: want authors or calibrate", *noiseMode)
	}
	var arms []arm
	if *sigmas != "" {
		for _, f := range strings.Split(*sigmas, ",") {
			sg, err := strconv.ParseFloat(f, 64)
			if err != nil || sg < 0 {
				return fmt.Errorf("-sigmas: %q is not a σ ≥ 0", f)
			}
			if sg == 0 {
				arms = append(arms, arm{"dp-sgd", 0})
			} else {
				arms = append(arms, arm{"input", sg})
			}
		}
	} else {
		for _, v := range strings.Split(*variants, ",") {
			arms = append(arms, arm{v, *sigma})
		}
	}

	train, test, name, err := loadData(*dataset, *data)
	if err != nil {
		return err
	}
	if *norm {
		if train, err = normalize(train); err != nil {
			return err
		}
		if test, err = normalize(test); err != nil {
			return err
		}
	}
	n := train.Len()
	steps := (n + *batch - 1) / *batch
	samp := training.Shuffle
	if *sampling == "poisson" {
		samp = training.Poisson
	}
	fmt.Printf("# data %s (%d training, %d test examples), normalize %v, weight decay %g, sampling %s, noise %s, a %g, batch %d, epochs %d, max RDP order %d (0: default), clip %s\n",
		name, n, test.Len(), *norm, *wd, *sampling, *noiseMode, *a, *batch, *epochs, *maxOrder, *clipMode)
	fmt.Println("eps_column\tz\tvariant\tsigma\tseed\ttest_accuracy\trdp_epsilon\tseconds")
	var curveFile *os.File
	if *curves != "" {
		if curveFile, err = os.OpenFile(*curves, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
			return err
		}
		defer curveFile.Close()
	}
	if *clipMode == "batch-mean" {
		return runBatchMeanGrid(train, test, arms2sigmas(arms), *epsList, *seedList, *noiseMode, *a, *wd, *batch, *epochs, acc)
	}
	for _, e := range strings.Split(*epsList, ",") {
		std, ok := paperStd[e]
		if !ok {
			return fmt.Errorf("-eps %s: not a column of Table 2 (0.30, 0.25, 0.20, 0.15, 0.10)", e)
		}
		z := std * float64(*batch)
		target := 0.0
		if *noiseMode == "calibrate" {
			z = 0
			if target, err = strconv.ParseFloat(e, 64); err != nil {
				return err
			}
		}
		for _, s := range strings.Split(*seedList, ",") {
			seed, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return fmt.Errorf("-seeds: %v", err)
			}
			for _, am := range arms {
				v := am.variant
				m, err := nn.New(models.LogisticRegression(), *batch, nn.WithSeed(seed))
				if err != nil {
					return err
				}
				p := &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: z, TargetEpsilon: target, Delta: 1e-5, Accountant: acc}
				if v != "dp-sgd" {
					var layout []smoothing.Tensor
					for _, t := range m.Layout() {
						layout = append(layout, smoothing.Tensor{Name: t.Name, Shape: t.Shape})
					}
					axes := m.SmoothingAxes()
					switch v {
					case "flat":
						axes = nil
					case "input":
					default:
						return fmt.Errorf("-variants: unknown %q", v)
					}
					lap, err := smoothing.NewLaplacian[float64](am.sigma, layout, smoothing.Axes(axes...))
					if axes == nil {
						lap, err = smoothing.NewLaplacian[float64](am.sigma, layout)
					}
					if err != nil {
						return err
					}
					p.Smoother = lap
				}
				seedCopy := seed
				var rule dpoptim.Rule = dpoptim.NewSGD(epochInverseTime{a: *a, stepsPerEpoch: steps})
				if *wd != 0 {
					rule = &weightDecay{Rule: rule, wd: *wd}
				}
				var avg *dpoptim.IterateAverage
				switch *avgIter {
				case "uniform":
					avg = &dpoptim.IterateAverage{}
				case "step":
					avg = &dpoptim.IterateAverage{Weights: epochInverseTime{a: *a, stepsPerEpoch: steps}}
				}
				var cb training.Callbacks
				if curveFile != nil {
					label := v
					if avg != nil {
						label += "+avg-" + *avgIter
					}
					cb.OnEpoch = curveWriter(curveFile, e, z, label, am.sigma, seed, *a)
				}
				tr, err := training.NewTrainer(m, training.TrainerConfig{
					Averaging: training.Averaging{Iterate: avg},
					Callbacks: cb,
					Data:      training.Data{Train: train, Test: test, Name: name},
					Rule:      rule,
					Privacy:   p,
					Schedule:  training.Schedule{BatchSize: *batch, Epochs: *epochs, Sampling: samp},
					Seed:      &seedCopy,
				})
				if err != nil {
					return err
				}
				start := time.Now()
				res, err := tr.Run(context.Background())
				if err != nil {
					return err
				}
				zz := tr.Plan().NoiseMultiplier
				if avg != nil {
					v += "+avg-" + *avgIter
				}
				sg := am.sigma
				if v == "dp-sgd" {
					sg = 0
				}
				fmt.Printf("%s\t%.4f\t%s\t%g\t%d\t%.2f\t%.4f\t%.0f\n", e, zz, v, sg, seed, 100*res.TestAccuracy, res.Spent.Epsilon, time.Since(start).Seconds())
				fmt.Fprintf(os.Stderr, "ε column %s z %.4f %s σ %g seed %d: %.2f%%\n", e, zz, v, sg, seed, 100*res.TestAccuracy)
			}
		}
	}
	return nil
}

// curveWriter returns an OnEpoch callback that writes one tab-separated line per epoch to
// f: the run's ε column, z (0 while calibrating: the line's z is the requested one, the
// summary line has the calibrated one), variant, σ (0 for DP-SGD), seed and a, then the
// epoch, the steps so far, the training loss, the test loss and the test accuracy (%).
// Each line is written as its epoch ends, so a run cut short leaves its epochs so far.
func curveWriter(f io.Writer, eps string, z float64, variant string, sigma float64, seed uint64, a float64) func(training.EpochMetrics) error {
	if variant == "dp-sgd" {
		sigma = 0
	}
	return func(m training.EpochMetrics) error {
		_, err := fmt.Fprintf(f, "%s\t%.4f\t%s\t%g\t%d\t%g\t%d\t%d\t%.6g\t%.6g\t%.2f\n",
			eps, z, variant, sigma, seed, a, m.Epoch, m.Step, m.TrainLoss, m.TestLoss, 100*m.TestAccuracy)
		return err
	}
}

// arm is one row of the table: a variant ("dp-sgd", "input", "flat") and its σ.
type arm struct {
	variant string
	sigma   float64
}

// arms2sigmas returns the σ of each arm (0 for DP-SGD); the batch-mean loop smooths
// along the inputs only.
func arms2sigmas(arms []arm) []float64 {
	var out []float64
	for _, a := range arms {
		if a.variant == "dp-sgd" {
			out = append(out, 0)
		} else {
			out = append(out, a.sigma)
		}
	}
	return out
}

// runBatchMeanGrid runs the authors' batch-mean clipping for every ε column, seed and σ:
// the noise std is the authors' (-noise authors) or 2√2·z with z calibrated to the
// column's ε (-noise calibrate). It prints the same columns as the per-example runs, the
// variant "batch-mean".
func runBatchMeanGrid(train, test datasets.Dataset, sigmas []float64, epsList, seedList, noiseMode string, a, wd float64, batch, epochs int, acc []accountant.Option) error {
	tr, te := toDense(train), toDense(test)
	q := float64(batch) / float64(tr.len())
	steps := accountant.StepsPerEpoch(tr.len(), batch) * epochs
	for _, e := range strings.Split(epsList, ",") {
		std, ok := paperStd[e]
		if !ok {
			return fmt.Errorf("-eps %s: not a column of Table 2 (0.30, 0.25, 0.20, 0.15, 0.10)", e)
		}
		if noiseMode == "calibrate" {
			target, err := strconv.ParseFloat(e, 64)
			if err != nil {
				return err
			}
			z, _, err := accountant.CalibrateNoise(q, steps, target, 1e-5, acc...)
			if err != nil {
				return err
			}
			std = z * batchMeanSensitivity
		}
		for _, s := range strings.Split(seedList, ",") {
			seed, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return fmt.Errorf("-seeds: %v", err)
			}
			for _, sg := range sigmas {
				start := time.Now()
				res, err := runBatchMean(tr, te, batchMeanConfig{std: std, sigma: sg, a: a, wd: wd, batch: batch, epochs: epochs, seed: seed, accounts: acc})
				if err != nil {
					return err
				}
				fmt.Printf("%s\t%.4f\tbatch-mean\t%g\t%d\t%.2f\t%.4f\t%.0f\n", e, res.z, sg, seed, 100*res.accuracy, res.eps, time.Since(start).Seconds())
				fmt.Fprintf(os.Stderr, "batch-mean ε column %s std %.4f z %.4f σ %g seed %d: %.2f%% (ε spent %.4g)\n", e, std, res.z, sg, seed, 100*res.accuracy, res.eps)
			}
		}
	}
	return nil
}

// loadData reads the two data sets of Table 2 as cmd/train -dataset and -data do: MNIST
// (the embedded sample without -data) and Fashion-MNIST (the Debian package's directory
// without -data).
func loadData(dataset, dir string) (train, test datasets.Dataset, name string, err error) {
	var tr, te *datasets.Images
	switch dataset {
	case "mnist":
		if dir == "" {
			tr, te, err = mnist.Embedded()
			return tr, te, "mnist-embedded", err
		}
		tr, te, err = mnist.Load(dir)
	case "fashion-mnist":
		if dir == "" {
			dir = mnist.DebianFashionDir
		}
		tr, te, err = mnist.LoadFashion(dir)
	default:
		return nil, nil, "", fmt.Errorf("-dataset %q: want mnist or fashion-mnist (Table 2's data sets)", dataset)
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("-data %s: %w", dir, err)
	}
	return tr, te, dataset, nil
}
