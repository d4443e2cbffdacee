package audit

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// MultiConfig describes a multi-run audit ([RunMulti]): R independent training runs, each
// with one canary whose inclusion is a fair coin. The zero value of every field is a
// documented default, so MultiConfig{} audits DP-SGD at ε = 1.5 with 200 runs.
type MultiConfig struct {
	// Common: the training audited and the bound's confidence and guesses. Defaults
	// here: BatchSize 2, Epochs 50 (100 steps per run), Epsilon 1.5 (at the canary's
	// sampling rate q = b/(Filler+1)), and Guesses 20, 40, 60, … up to R. BatchSize must
	// keep the step count the same with and without the canary (⌈Filler/b⌉ =
	// ⌈(Filler+1)/b⌉), so that a run's length does not reveal the coin: the trainer sets
	// q = b/n and ⌈n/b⌉ steps per epoch from the n examples it gets.
	Common
	// Runs R ≥ 2 (default 200): the number of training runs, one canary each, so m = R in
	// the bound.
	Runs int
	// Filler is the number of other examples in every run (default 3). They are blank
	// (all-zero inputs, whose gradient is exactly zero): they count in the realised batch
	// but add nothing to the clipped sum, so the two worlds differ only by the canary.
	Filler int
	// Dim is the model's input dimension (default 1024): logistic regression with two
	// classes has 2·Dim parameters, and the more there are, the more sharply the norm of a
	// step's update reveals its normaliser.
	Dim int
}

// MultiScore is the score of [RunMulti], reported in Result.Score.
const MultiScore = "batch-and-step-likelihood"

func (c MultiConfig) withDefaults() (MultiConfig, error) {
	setDefault(&c.Runs, 200)
	setDefault(&c.Filler, 3)
	setDefault(&c.BatchSize, 2)
	setDefault(&c.Epochs, 50)
	setDefault(&c.Dim, 1024)
	c.Common.defaults(1.5)
	switch {
	case c.Runs < 2:
		return c, fmt.Errorf("%w: %d runs, want at least 2", ErrConfig, c.Runs)
	case c.Filler < 1:
		return c, fmt.Errorf("%w: %d filler examples, want ≥ 1", ErrConfig, c.Filler)
	case c.BatchSize < 1 || c.BatchSize > c.Filler:
		return c, fmt.Errorf("%w: batch size %d, want 1 ≤ b ≤ %d (the filler examples)", ErrConfig, c.BatchSize, c.Filler)
	case (c.Filler+c.BatchSize-1)/c.BatchSize != (c.Filler+c.BatchSize)/c.BatchSize:
		return c, fmt.Errorf("%w: batch size %d divides the %d filler examples, so a run with the canary would take more steps per epoch than one without", ErrConfig, c.BatchSize, c.Filler)
	case c.Dim < 1:
		return c, fmt.Errorf("%w: input dimension %d, want ≥ 1", ErrConfig, c.Dim)
	}
	if err := c.Common.check(); err != nil {
		return c, err
	}
	everyTwenty := func(yield func(int) bool) {
		for r := 20; yield(r); r += 20 {
		}
	}
	return c, c.Common.guesses(everyTwenty, c.Runs)
}

// RunMulti audits the mechanism with R independent training runs, one canary each: the
// special case m = R of Steinke, Nasr & Jagielski's theorem in which each "training run"
// of their Algorithm 1 is one of ours and the canaries' coins are independent across
// runs, so [EpsilonLowerBound] applies unchanged with m = R.
//
// Each run drives the real training.Trainer (Poisson sampling, flat clipping, dpoptim.Private
// with its noise and normalisation, the ledger) on Filler blank examples plus, if the
// run's coin says so, the canary: the unit vector of input coordinate 0 with label 0,
// whose clipped gradient adds C along a fixed direction of row 0 whenever it is sampled.
// The noise multiplier is the same in every run, calibrated for Epsilon at the canary's
// sampling rate q = b/(Filler+1); the claim audited (Result.Epsilon) is the ledger's ε of
// a run with the canary. (The trainer sets q = b/n, so runs without it sample the blanks
// at b/Filler; the blanks add nothing but their count, which the correct mechanism never
// reveals.)
//
// The white-box auditor sees every step's update Δθ. Its norm is lr·z·C·√d times the
// normaliser (plus a signal of at most lr·|B|·C times it): the correct mechanism divides
// by the expected batch b in every step, so the norm carries no information; a mechanism
// that divides by the realised batch |B_t| reveals it, and with the canary the batch can
// hold Filler+1 examples, which a run without it never does. The score adds two log
// likelihood ratios "with" : "without the canary": that of the estimated batch sizes
// k_t = round(lr·z·C·√d / ‖Δθ_t‖) under realised-batch normalisation (Binomial(Filler+1,
// b/(Filler+1)) against Binomial(Filler, b/Filler), each per-step ratio capped at e^±30),
// and that of the canary row's movement, as [StepLikelihood] (undoing the normaliser k_t).
// The guessing rule and its multiple-testing correction are those of [Run].
func RunMulti(ctx context.Context, cfg MultiConfig) (Result, error) {
	res, _, err := runMulti(ctx, cfg)
	return res, err
}

// multiScores are the per-run outcome of RunMulti, for the tests.
type multiScores struct {
	score []float64
	in    []bool
	maxK  []int // the largest estimated batch size of each run
	// kCount[w][k] counts the steps of runs without (w = 0) and with (w = 1) the canary
	// whose estimated batch size is k (the last entry: k > Filler+1).
	kCount [2][]int
}

func runMulti(ctx context.Context, cfg MultiConfig) (Result, multiScores, error) {
	start := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, multiScores{}, err
	}
	rng, err := coinSource(cfg.Seed)
	if err != nil {
		return Result{}, multiScores{}, err
	}
	R, nf, b := cfg.Runs, cfg.Filler, cfg.BatchSize
	in := make([]bool, R)
	included := 0
	for r := range R {
		in[r] = rng.Uint64()&1 == 1
		if in[r] {
			included++
		}
	}
	qIn, qOut := float64(b)/float64(nf+1), float64(b)/float64(nf)
	steps := cfg.Epochs * ((nf + b) / b)
	z := cfg.NoiseMultiplier
	if z == 0 {
		if z, _, err = accountant.CalibrateNoise(qIn, steps, cfg.Epsilon, cfg.Delta); err != nil {
			return Result{}, multiScores{}, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	lr := cfg.LearningRate
	if lr == 0 {
		lr = autoLearningRate(b, steps, z, qIn, cfg.Clip)
	}
	spec, opts := cfg.model("audit-multi-logreg", cfg.Dim)
	// One model for all runs, reset to the same initial weights before each (building the
	// graphs is the slow part).
	model, err := nn.New(spec, nf+1, opts...)
	if err != nil {
		return Result{}, multiScores{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	d := model.NumParams()
	init := make([]float64, d)
	model.Params(init)

	// The log likelihood ratio of an estimated batch size k under realised-batch
	// normalisation: k = max(|B|, 1), |B| ~ Binomial(nf+1, qIn) with the canary and
	// Binomial(nf, qOut) without.
	batchLLR := make([]float64, nf+2)
	for k := 1; k <= nf+1; k++ {
		pIn, pOut := binomialPMF(nf+1, k, qIn), binomialPMF(nf, k, qOut)
		if k == 1 {
			pIn += binomialPMF(nf+1, 0, qIn)
			pOut += binomialPMF(nf, 0, qOut)
		}
		llr := 30.0
		if pOut > 0 {
			llr = max(-30, min(30, math.Log(pIn/pOut)))
		}
		batchLLR[k] = llr
	}

	noise := "secure" // every run's generators with secure keys
	if cfg.Seed != nil {
		noise = fmt.Sprintf("seeded(%d), a seed per run derived from it", *cfg.Seed)
	}
	var (
		ms       = multiScores{score: make([]float64, R), in: in, maxK: make([]int, R), kCount: [2][]int{make([]int, nf+3), make([]int, nf+3)}}
		claim    = math.NaN()
		prev     = make([]float64, d)
		now      = make([]float64, d)
		fullNorm = lr * z * cfg.Clip * math.Sqrt(float64(d)) // ‖Δθ‖ when the normaliser is 1
		unit1    = math.Sqrt2 * lr * cfg.Clip                // canary row movement of one inclusion, normaliser 1
	)
	for r := range R {
		if err := ctx.Err(); err != nil {
			return Result{}, multiScores{}, err
		}
		if err := model.SetParams(init); err != nil {
			return Result{}, multiScores{}, err
		}
		data := &multiData{dim: cfg.Dim, n: nf}
		if in[r] {
			data.n, data.canary = nf+1, true
		}
		var seed *uint64
		if cfg.Seed != nil {
			s := *cfg.Seed ^ (uint64(r+1) * 0x9E3779B97F4A7C15)
			seed = &s
		}
		copy(prev, init)
		world := 0
		if in[r] {
			world = 1
		}
		var score float64
		maxK := 0
		tr, err := training.NewTrainer(model, training.TrainerConfig{
			Data:     training.Data{Train: data, Name: "audit-multi"},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(lr)),
			Schedule: training.Schedule{BatchSize: b, Epochs: cfg.Epochs},
			Seed:     seed,
			Settings: map[string]string{"lr": strconv.FormatFloat(lr, 'g', -1, 64)},
			Privacy: &training.Privacy{
				Clip:            clipping.Flat{C: cfg.Clip},
				NoiseMultiplier: z,
				Delta:           cfg.Delta,
			},
			Callbacks: training.Callbacks{OnStep: func(training.StepProgress) error {
				model.Params(now)
				var sq float64
				for i := range now {
					v := now[i] - prev[i]
					sq += v * v
				}
				k := 1
				if sq > 0 {
					k = max(1, int(math.Round(fullNorm/math.Sqrt(sq))))
				}
				maxK = max(maxK, k)
				ms.kCount[world][min(k, nf+2)]++
				score += batchLLR[min(k, nf+1)]
				// Canary row 0 along its descent direction (+ on logit 0, − on logit 1), in
				// units of one inclusion once the normaliser 1/k is undone.
				x := ((now[0] - prev[0]) - (now[1] - prev[1])) * float64(k) / unit1
				score += logMixture(qIn, (x-0.5)/(z*z))
				prev, now = now, prev
				return nil
			}},
		})
		if err != nil {
			return Result{}, multiScores{}, fmt.Errorf("%w: %v", ErrConfig, err)
		}
		if tr.Plan().Steps != steps {
			return Result{}, multiScores{}, fmt.Errorf("audit: run %d has %d steps, want %d", r, tr.Plan().Steps, steps)
		}
		if _, err := tr.Run(ctx); err != nil {
			return Result{}, multiScores{}, err
		}
		ms.score[r], ms.maxK[r] = score, maxK
		if in[r] && math.IsNaN(claim) {
			spent, err := tr.Spent()
			if err != nil {
				return Result{}, multiScores{}, err
			}
			claim = spent.Epsilon
		}
	}
	if math.IsNaN(claim) {
		// No run included the canary: the claim is the plan's ε of a run that would have.
		tr, err := training.NewTrainer(model, training.TrainerConfig{
			Data:     training.Data{Train: &multiData{dim: cfg.Dim, n: nf + 1, canary: true}, Name: "audit-multi"},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(lr)),
			Schedule: training.Schedule{BatchSize: b, Epochs: cfg.Epochs},
			Privacy:  &training.Privacy{Clip: clipping.Flat{C: cfg.Clip}, NoiseMultiplier: z, Delta: cfg.Delta},
		})
		if err != nil {
			return Result{}, multiScores{}, err
		}
		claim = tr.Plan().Spent.Epsilon
	}
	best, rule, v, err := bestBound(ms.score, in, guessRules(cfg.Guesses), cfg.Confidence, cfg.Delta)
	if err != nil {
		return Result{}, multiScores{}, err
	}
	return Result{
		Mode:                       "multi-run",
		Epsilon:                    claim,
		EmpiricalEpsilonLowerBound: best,
		Delta:                      cfg.Delta,
		Confidence:                 cfg.Confidence,
		Canaries:                   R,
		Runs:                       R,
		Included:                   included,
		Guesses:                    rule.kIn + rule.kOut,
		GuessesIn:                  rule.kIn,
		Correct:                    v,
		GuessCounts:                cfg.Guesses,
		NoiseMultiplier:            z,
		Clip:                       cfg.Clip,
		SampleRate:                 qIn,
		Steps:                      steps,
		DatasetSize:                nf + 1,
		LearningRate:               lr,
		Noise:                      noise,
		Score:                      MultiScore,
		Seconds:                    time.Since(start).Seconds(),
		Flagged:                    best > claim,
	}, ms, nil
}

// binomialPMF is P[Binomial(n, p) = k].
func binomialPMF(n, k int, p float64) float64 {
	if p >= 1 {
		if k == n {
			return 1
		}
		return 0
	}
	return math.Exp(logBinomialPMF(n, k, math.Log(p), math.Log1p(-p)))
}

// multiData is one run's training set: n examples, the first of them the canary when n
// exceeds the filler count (the unit vector of coordinate 0, label 0), the rest blank.
type multiData struct {
	dim, n int
	canary bool
}

func (c *multiData) Len() int        { return c.n }
func (c *multiData) Shape() []int    { return []int{c.dim} }
func (c *multiData) NumClasses() int { return 2 }

func (c *multiData) Example(i int, dst []float32) int {
	if len(dst) != c.dim {
		panic(fmt.Sprintf("audit: example buffer of %d values, want %d", len(dst), c.dim))
	}
	clear(dst)
	if c.canary && i == 0 {
		dst[0] = 1
	}
	return 0
}
