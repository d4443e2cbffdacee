package main

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/smoothing"
)

// The authors' clipping (-clip batch-mean): their logistic-regression code
// (Logistic-Regression/Logistic_NonconstantLR_*.py in github.com/BaoWangMath/DP-LSSGD;
// digest §1.3) clips the MEAN gradient of a batch, tensor by tensor, to norm C = 1, adds
// Gaussian noise of std s to each coordinate, smooths each tensor (the [10, 784] weight
// along the inputs of one class, class after class; the bias alone), adds 1e-4·w and
// steps. privtrain's trainer clips per example, so this is a separate loop for the
// 784 → 10 softmax regression, with its own honest accounting:
//
// Each of the two clipped tensors lies in a ball of radius C whatever the batch, so under
// add/remove adjacency the clipped mean moves by at most 2C per tensor, 2√2·C in all: the
// step is a Gaussian mechanism of sensitivity Δ = 2√2·C and noise multiplier z = s/Δ.
// With Poisson sampling at q = b/n the sampled Gaussian mechanism's RDP bound holds for
// any query of sensitivity Δ (the divergence of the two mixtures is at most the worst over
// the other examples' batches, each a shift of norm ≤ Δ), so the accountant's ε at z is an
// upper bound on what a run spends. Compare the per-example sum, whose sensitivity is C
// for a noise of z·C on the sum, i.e. z·C/b on the mean: the same s buys a 2√2·b ≈ 362
// times smaller z here.

// batchMeanResult is one run of the authors' clipping.
type batchMeanResult struct {
	z, eps, accuracy float64
}

// batchMeanSensitivity is Δ/C = 2√2 (two tensors, each anywhere in its ball of radius C).
var batchMeanSensitivity = 2 * math.Sqrt2

// denseData holds a data set's examples as float64 rows and its labels.
type denseData struct {
	x      [][]float64
	y      []int
	d, cls int
}

func (d denseData) len() int { return len(d.x) }

func toDense(ds datasets.Dataset) denseData {
	n, d := ds.Len(), datasets.Size(ds)
	buf := make([]float32, d)
	out := denseData{x: make([][]float64, n), y: make([]int, n), d: d, cls: ds.NumClasses()}
	for i := range n {
		out.y[i] = ds.Example(i, buf)
		row := make([]float64, d)
		for j, v := range buf {
			row[j] = float64(v)
		}
		out.x[i] = row
	}
	return out
}

// batchMeanConfig is one run's configuration.
type batchMeanConfig struct {
	std      float64 // noise std s on each coordinate of the clipped mean
	sigma    float64 // Laplacian smoothing σ (0: DP-SGD)
	a, wd    float64
	batch    int
	epochs   int
	seed     uint64
	accounts []accountant.Option
}

// runBatchMean trains softmax regression from zero weights with the authors' clipping and
// Poisson batches, and returns the test accuracy of the last iterate and the ε (δ = 1e-5)
// that the run's T steps spend at z = s/(2√2·C).
func runBatchMean(train, test denseData, cfg batchMeanConfig) (batchMeanResult, error) {
	const clip, delta = 1.0, 1e-5
	n, d, k := len(train.x), train.d, train.cls
	q := float64(cfg.batch) / float64(n)
	spe := accountant.StepsPerEpoch(n, cfg.batch)
	steps := spe * cfg.epochs
	z := cfg.std / (batchMeanSensitivity * clip)
	led := accountant.NewLedger(cfg.accounts...)
	if err := led.Record(q, z, steps); err != nil {
		return batchMeanResult{}, err
	}
	spent, err := led.Epsilon(delta)
	if err != nil {
		return batchMeanResult{}, err
	}
	// Parameters: the weight [k, d] row-major (the authors' nn.Linear order), then the bias.
	w := make([]float64, k*d+k)
	g := make([]float64, len(w))
	var lap *smoothing.Laplacian[float64]
	if cfg.sigma > 0 {
		if lap, err = smoothing.NewLaplacian[float64](cfg.sigma, []smoothing.Tensor{{Name: "w", Shape: []int{k, d}}, {Name: "b", Shape: []int{k}}}); err != nil {
			return batchMeanResult{}, err
		}
	}
	sampler, err := privrand.NewPoisson(n, q)
	if err != nil {
		return batchMeanResult{}, err
	}
	batches := privrand.NewSeeded(cfg.seed, privrand.Sampler).Rand()
	noise := privrand.NewSeeded(cfg.seed, privrand.Noise).Rand()
	logits := make([]float64, k)
	var idx []int
	for t := range steps {
		idx = sampler.Sample(batches, idx[:0])
		clear(g)
		for _, i := range idx {
			softmaxResidual(w, train.x[i], train.y[i], d, k, logits)
			for c := range k {
				r := logits[c]
				row := g[c*d : (c+1)*d]
				for j, v := range train.x[i] {
					row[j] += r * v
				}
				g[k*d+c] += r
			}
		}
		if len(idx) > 0 {
			for j := range g {
				g[j] /= float64(len(idx))
			}
		}
		clipTo(g[:k*d], clip)
		clipTo(g[k*d:], clip)
		privrand.AddGaussian(noise, g, cfg.std)
		if lap != nil {
			if err := lap.Smooth(g); err != nil {
				return batchMeanResult{}, err
			}
		}
		lr := cfg.a / float64(1+spe*(t/spe))
		for j := range w {
			w[j] -= lr * (g[j] + cfg.wd*w[j])
		}
	}
	correct := 0
	for i, x := range test.x {
		for c := range k {
			s := w[k*d+c]
			for j, v := range x {
				s += w[c*d+j] * v
			}
			logits[c] = s
		}
		best := 0
		for c := range k {
			if logits[c] > logits[best] {
				best = c
			}
		}
		if best == test.y[i] {
			correct++
		}
	}
	if math.IsNaN(w[0]) {
		return batchMeanResult{}, fmt.Errorf("diverged")
	}
	return batchMeanResult{z: z, eps: spent.Epsilon, accuracy: float64(correct) / float64(len(test.x))}, nil
}

// softmaxResidual sets r to softmax(Wx + b) − e_y.
func softmaxResidual(w, x []float64, y, d, k int, r []float64) {
	m := math.Inf(-1)
	for c := range k {
		s := w[k*d+c]
		for j, v := range x {
			s += w[c*d+j] * v
		}
		r[c] = s
		m = max(m, s)
	}
	sum := 0.0
	for c := range k {
		r[c] = math.Exp(r[c] - m)
		sum += r[c]
	}
	for c := range k {
		r[c] /= sum
	}
	r[y]--
}

// clipTo scales v to norm at most c.
func clipTo(v []float64, c float64) {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	if n := math.Sqrt(s); n > c {
		for j := range v {
			v[j] *= c / n
		}
	}
}
