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
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
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
	sampling := flag.String("sampling", "shuffle", "shuffle (the authors' DataLoader) or poisson")
	flag.Parse()

	train, test, name, err := loadData(*dataset, *data)
	if err != nil {
		return err
	}
	n := train.Len()
	steps := (n + *batch - 1) / *batch
	samp := checkpoint.Shuffle
	if *sampling == "poisson" {
		samp = checkpoint.Poisson
	}
	fmt.Println("eps_column\tz\tvariant\tseed\ttest_accuracy\trdp_epsilon\tseconds")
	for _, e := range strings.Split(*epsList, ",") {
		std, ok := paperStd[e]
		if !ok {
			return fmt.Errorf("-eps %s: not a column of Table 2 (0.30, 0.25, 0.20, 0.15, 0.10)", e)
		}
		z := std * float64(*batch)
		for _, s := range strings.Split(*seedList, ",") {
			seed, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return fmt.Errorf("-seeds: %v", err)
			}
			for _, v := range strings.Split(*variants, ",") {
				m, err := nn.New(models.LogisticRegression(), *batch, nn.WithSeed(seed))
				if err != nil {
					return err
				}
				p := &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: z, Delta: 1e-5}
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
					lap, err := smoothing.NewLaplacian[float64](*sigma, layout, smoothing.Axes(axes...))
					if axes == nil {
						lap, err = smoothing.NewLaplacian[float64](*sigma, layout)
					}
					if err != nil {
						return err
					}
					p.Smoother = lap
				}
				seedCopy := seed
				tr, err := training.NewTrainer(m, training.TrainerConfig{
					Train: train, Test: test, DatasetName: name,
					Rule:      dpoptim.NewSGD(epochInverseTime{a: *a, stepsPerEpoch: steps}),
					Privacy:   p,
					BatchSize: *batch, Epochs: *epochs, Sampling: samp, Seed: &seedCopy,
				})
				if err != nil {
					return err
				}
				start := time.Now()
				res, err := tr.Run(context.Background())
				if err != nil {
					return err
				}
				fmt.Printf("%s\t%.4f\t%s\t%d\t%.2f\t%.4f\t%.0f\n", e, z, v, seed, 100*res.TestAccuracy, res.Spent.Epsilon, time.Since(start).Seconds())
				fmt.Fprintf(os.Stderr, "ε column %s z %.4f %s seed %d: %.2f%%\n", e, z, v, seed, 100*res.TestAccuracy)
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
