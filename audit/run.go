package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

// Config describes an audit run. The zero value of every field is a documented default,
// so Config{} audits DP-SGD at ε = 2.
type Config struct {
	// Common: the training audited and the bound's confidence and guesses. Defaults
	// here: BatchSize n/10 (q = b/n for the n examples actually trained on, real ones
	// and included canaries), Epochs 10, Epsilon 2, and Guesses 20, 50, 100, 200, 500,
	// 1000, … up to m.
	Common
	// Canaries m in [2, MaxCanaries] (default 1000); each is included by a fair coin.
	Canaries int
	// Real holds the real training examples (any shape; flattened, labels mod 2). nil:
	// RealExamples digits of the embedded MNIST training sample.
	Real datasets.Dataset
	// RealExamples is the number of embedded MNIST digits when Real is nil (default 1000).
	RealExamples int
	// ResumeAfter > 0 stops training after that many steps, takes a checkpoint, and
	// finishes the plan in a new trainer restored from it: an audit of the resume path.
	ResumeAfter int
	// PhysicalBatch is the model's batch (default 128).
	PhysicalBatch int
	// Score is how canaries are scored (default StepLikelihood).
	Score Score
}

// Score is a rule for scoring canaries; the auditor guesses "in" for the highest.
type Score int

const (
	// StepLikelihood, the default, sums over the steps the log likelihood ratio of the
	// canary's row movement under "sampled" versus "not sampled" (the white-box auditor
	// sees every update): the most powerful test for one canary of the
	// Poisson-subsampled Gaussian mechanism, given the run's q and z.
	StepLikelihood Score = iota
	// AccumulatedUpdate is the alignment of the final minus the initial weights with the
	// canary's direction: the sum of the per-step alignments, as in the paper's
	// white-box experiments. It needs only the first and last model.
	AccumulatedUpdate
)

var scoreNames = [...]string{StepLikelihood: "step-likelihood", AccumulatedUpdate: "accumulated-update"}

// String returns "step-likelihood" or "accumulated-update".
func (s Score) String() string {
	if s < 0 || int(s) >= len(scoreNames) {
		return fmt.Sprintf("Score(%d)", int(s))
	}
	return scoreNames[s]
}

// Result is the outcome of an audit. Its JSON field names are those of cmd/audit -json.
type Result struct {
	// Mode is "one-run" ([Run]) or "multi-run" ([RunMulti]).
	Mode string `json:"mode"`
	// Epsilon is what the run's privacy ledger reports at Delta: the claim under audit.
	Epsilon float64 `json:"epsilon"`
	// EmpiricalEpsilonLowerBound holds with probability Confidence; above Epsilon it
	// means the mechanism does not deliver its claim.
	EmpiricalEpsilonLowerBound float64 `json:"empirical_epsilon_lower_bound"`
	Delta                      float64 `json:"delta"`
	Confidence                 float64 `json:"confidence"`
	Canaries                   int     `json:"canaries"`          // m
	Runs                       int     `json:"runs"`              // training runs: 1, or m for RunMulti
	Included                   int     `json:"included_canaries"` // canaries whose coin said "in"
	Guesses                    int     `json:"guesses"`           // r of the best guessing rule
	GuessesIn                  int     `json:"guesses_in"`        // its "in" guesses (the rest are "out")
	Correct                    int     `json:"correct_guesses"`   // correct among them
	GuessCounts                []int   `json:"guess_counts_tried"`
	NoiseMultiplier            float64 `json:"noise_multiplier"`
	Clip                       float64 `json:"clip"`
	SampleRate                 float64 `json:"sample_rate"`
	Steps                      int     `json:"steps"`
	DatasetSize                int     `json:"dataset_size"` // real examples + included canaries
	LearningRate               float64 `json:"learning_rate"`
	Noise                      string  `json:"noise"` // "secure" or "seeded(s)" (multi-run: the seed the runs' seeds derive from)
	Score                      string  `json:"score"` // "step-likelihood" or "accumulated-update"
	Seconds                    float64 `json:"seconds"`
	// Flagged is EmpiricalEpsilonLowerBound > Epsilon.
	Flagged bool `json:"flagged"`
}

// MaxCanaries bounds Config.Canaries. Every canary is an input coordinate of its own and
// about half of them are training examples, so a pass costs about (n + m/2)·(d + m)
// multiply-adds and every model call holds PhysicalBatch rows of d + m inputs: at the
// maximum and the defaults (1,000 digits of d = 784), 5·10⁹ per pass and 52 MB per
// 128-row call, with the scores O(m). Past it memory and time grow without buying a
// tighter bound (the default guesses stop at 50,000); 10⁹ canaries took 4.9 GB in 15 s
// before failing (issue 23).
const MaxCanaries = 100_000

// withDefaults fills the zero fields of c and checks the rest.
func (c Config) withDefaults() (Config, error) {
	setDefault(&c.Canaries, 1000)
	setDefault(&c.RealExamples, 1000)
	setDefault(&c.Epochs, 10)
	setDefault(&c.PhysicalBatch, 128)
	c.Common.defaults(2)
	switch {
	case c.Canaries < 2 || c.Canaries > MaxCanaries:
		return c, fmt.Errorf("%w: %d canaries, want 2 to %d", ErrConfig, c.Canaries, MaxCanaries)
	case c.Real == nil && c.RealExamples < 0:
		return c, fmt.Errorf("%w: %d real examples, want ≥ 0", ErrConfig, c.RealExamples)
	case c.BatchSize < 0:
		return c, fmt.Errorf("%w: batch size %d, want ≥ 1 (or 0 for n/10)", ErrConfig, c.BatchSize)
	case c.ResumeAfter < 0:
		return c, fmt.Errorf("%w: resume after %d steps, want ≥ 0", ErrConfig, c.ResumeAfter)
	case c.Score != StepLikelihood && c.Score != AccumulatedUpdate:
		return c, fmt.Errorf("%w: unknown score %v", ErrConfig, c.Score)
	case c.PhysicalBatch < 1:
		return c, fmt.Errorf("%w: physical batch %d, want ≥ 1", ErrConfig, c.PhysicalBatch)
	}
	if err := c.Common.check(); err != nil {
		return c, err
	}
	return c, c.Common.guesses(slices.Values([]int{20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}), c.Canaries)
}

// errPause stops the first trainer of a resumed audit.
var errPause = errors.New("audit: pause for the checkpoint")

// Run trains once with canaries and returns the audit. It drives the real mechanism:
// training.Trainer (Poisson sampling, flat clipping, dpoptim.Private around SGD, the
// accountant's ledger, and with ResumeAfter its checkpoint and Restore).
func Run(ctx context.Context, cfg Config) (Result, error) {
	res, _, err := run(ctx, cfg)
	return res, err
}

// canaryScores are the per-canary outcome of a run, for the tests: the scores, the
// coins, and the unit of a score (the row movement of one inclusion, √2·lr·C/b).
type canaryScores struct {
	accumulated, stepLLR []float64
	in                   []bool
	unit                 float64
}

func run(ctx context.Context, cfg Config) (Result, canaryScores, error) {
	start := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, canaryScores{}, err
	}
	realData := cfg.Real
	if realData == nil {
		train, _, err := mnist.Embedded()
		if err != nil {
			return Result{}, canaryScores{}, err
		}
		if realData, err = datasets.StratifiedSubset(train, cfg.RealExamples); err != nil {
			return Result{}, canaryScores{}, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	}
	rng, err := coinSource(cfg.Seed)
	if err != nil {
		return Result{}, canaryScores{}, err
	}
	m := cfg.Canaries
	in := make([]bool, m)
	label := make([]int, m)
	var members []int
	for i := range m {
		in[i] = rng.Uint64()&1 == 1
		label[i] = int(rng.Uint64() & 1)
		if in[i] {
			members = append(members, i)
		}
	}
	data := newCanaryData(realData, m, members, label)
	n := data.Len()
	b := cfg.BatchSize
	if b == 0 {
		b = max(1, n/10)
	}
	if b > n {
		return Result{}, canaryScores{}, fmt.Errorf("%w: batch size %d for %d examples", ErrConfig, b, n)
	}
	steps := cfg.Epochs * ((n + b - 1) / b)
	q := float64(b) / float64(n)
	lr := cfg.LearningRate
	if lr == 0 {
		z := cfg.NoiseMultiplier
		if z == 0 {
			if z, _, err = accountant.CalibrateNoise(q, steps, cfg.Epsilon, cfg.Delta); err != nil {
				return Result{}, canaryScores{}, fmt.Errorf("%w: %v", ErrConfig, err)
			}
		}
		lr = autoLearningRate(b, steps, z, q, cfg.Clip)
	}
	spec, opts := cfg.model("audit-logreg", data.dim)
	// A white-box auditor sees every step's update. observe scores it for each canary:
	// x, the movement of the canary's row along its direction in units of one inclusion,
	// is N(1, z²) in a step that sampled the canary and N(0, z²) otherwise, so the step's
	// likelihood ratio "in" : "out" is 1 − q + q·exp((x − ½)/z²) (Neyman–Pearson for the
	// Poisson-subsampled Gaussian). stepLLR sums their logs.
	var (
		cur         *training.Trainer
		prev, now   []float64
		stepLLR     = make([]float64, m)
		unit        = math.Sqrt2 * lr * cfg.Clip / float64(b)
		zPlan, qRun float64
	)
	observe := func() {
		cur.Model().Params(now)
		for i := range m {
			row := (data.realDim + i) * 2
			y := label[i]
			x := ((now[row+y] - prev[row+y]) - (now[row+1-y] - prev[row+1-y])) / unit
			stepLLR[i] += logMixture(qRun, (x-0.5)/(zPlan*zPlan))
		}
		prev, now = now, prev
	}
	newTrainer := func() (*training.Trainer, error) {
		model, err := nn.New(spec, cfg.PhysicalBatch, opts...)
		if err != nil {
			return nil, err
		}
		return training.NewTrainer(model, training.TrainerConfig{
			Data:     training.Data{Train: data, Name: "audit-canaries"},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(lr)),
			Schedule: training.Schedule{BatchSize: b, Epochs: cfg.Epochs},
			Seed:     cfg.Seed,
			Settings: map[string]string{"lr": strconv.FormatFloat(lr, 'g', -1, 64)},
			Privacy: &training.Privacy{
				Clip:            clipping.Flat{C: cfg.Clip},
				NoiseMultiplier: cfg.NoiseMultiplier,
				TargetEpsilon:   cfg.Epsilon,
				Delta:           cfg.Delta,
			},
			Callbacks: training.Callbacks{OnStep: func(p training.StepProgress) error {
				observe()
				if cfg.ResumeAfter > 0 && p.GlobalStep == cfg.ResumeAfter {
					return errPause
				}
				return nil
			}},
		})
	}
	tr, err := newTrainer()
	if err != nil {
		return Result{}, canaryScores{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if cfg.ResumeAfter >= tr.Plan().Steps {
		return Result{}, canaryScores{}, fmt.Errorf("%w: resume after %d steps of a %d-step plan", ErrConfig, cfg.ResumeAfter, tr.Plan().Steps)
	}
	cur, zPlan, qRun = tr, tr.Plan().NoiseMultiplier, tr.Plan().SampleRate
	before := make([]float64, tr.Model().NumParams())
	tr.Model().Params(before)
	prev, now = slices.Clone(before), make([]float64, len(before))
	_, err = tr.Run(ctx)
	if cfg.ResumeAfter > 0 && errors.Is(err, errPause) {
		c, cerr := tr.Checkpoint()
		if cerr != nil {
			return Result{}, canaryScores{}, cerr
		}
		if tr, err = newTrainer(); err != nil {
			return Result{}, canaryScores{}, err
		}
		if err := tr.Restore(c); err != nil {
			return Result{}, canaryScores{}, err
		}
		cur = tr
		_, err = tr.Run(ctx)
	}
	if err != nil {
		return Result{}, canaryScores{}, err
	}
	after := make([]float64, len(before))
	tr.Model().Params(after)
	spent, err := tr.Spent()
	if err != nil {
		return Result{}, canaryScores{}, err
	}

	// The accumulated update of canary i's row along its descent direction (+1 on its
	// label's logit, −1 on the other).
	accumulated := make([]float64, m)
	for i := range m {
		row := (data.realDim + i) * 2
		y := label[i]
		accumulated[i] = (after[row+y] - before[row+y]) - (after[row+1-y] - before[row+1-y])
	}
	scores := stepLLR
	if cfg.Score == AccumulatedUpdate {
		scores = accumulated
	}
	best, rule, v, err := bestBound(scores, in, guessRules(cfg.Guesses), cfg.Confidence, cfg.Delta)
	if err != nil {
		return Result{}, canaryScores{}, err
	}
	plan := tr.Plan()
	cs := canaryScores{accumulated: accumulated, stepLLR: stepLLR, in: in, unit: unit}
	return Result{
		Mode:                       "one-run",
		Runs:                       1,
		Epsilon:                    spent.Epsilon,
		EmpiricalEpsilonLowerBound: best,
		Delta:                      cfg.Delta,
		Confidence:                 cfg.Confidence,
		Canaries:                   m,
		Included:                   len(members),
		Guesses:                    rule.kIn + rule.kOut,
		GuessesIn:                  rule.kIn,
		Correct:                    v,
		GuessCounts:                cfg.Guesses,
		NoiseMultiplier:            plan.NoiseMultiplier,
		Clip:                       cfg.Clip,
		SampleRate:                 plan.SampleRate,
		Steps:                      tr.Steps(),
		DatasetSize:                n,
		LearningRate:               lr,
		Noise:                      tr.Noise(),
		Score:                      cfg.Score.String(),
		Seconds:                    time.Since(start).Seconds(),
		Flagged:                    best > spent.Epsilon,
	}, cs, nil
}

// guessRule is one way of guessing: kIn "in" guesses for the highest scores and
// kOut "out" guesses for the lowest.
type guessRule struct{ kIn, kOut int }

// guessRules are the rules tried for the guess counts r: r/2 each way, and r "in" only
// (the paper's k− = 0; for a likelihood-ratio score the top of the ranking is often
// surer than the bottom).
func guessRules(guesses []int) []guessRule {
	var rules []guessRule
	for _, r := range guesses {
		rules = append(rules, guessRule{r / 2, r / 2}, guessRule{r, 0})
	}
	return rules
}

// bestBound applies every guessing rule and returns the largest bound with its rule and
// correct count. Each bound is computed at confidence 1 − (1 − confidence)/len(rules), so
// the largest holds at the given confidence (a union bound over the rules tried).
func bestBound(scores []float64, in []bool, rules []guessRule, confidence, delta float64) (eps float64, best guessRule, v int, err error) {
	m := len(scores)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	each := 1 - (1-confidence)/float64(len(rules))
	best, v = rules[0], -1
	for _, g := range rules {
		correct := 0
		for _, i := range order[:g.kIn] {
			if in[i] {
				correct++
			}
		}
		for _, i := range order[m-g.kOut:] {
			if !in[i] {
				correct++
			}
		}
		b, err := EpsilonLowerBound(m, g.kIn+g.kOut, correct, each, delta)
		if err != nil {
			return 0, guessRule{}, 0, err
		}
		if v < 0 || b > eps {
			eps, best, v = b, g, correct
		}
	}
	return eps, best, v, nil
}

// logMixture is log(1 − q + q·e^a) without overflow.
func logMixture(q, a float64) float64 {
	if a > 0 {
		return a + math.Log(q+(1-q)*math.Exp(-a))
	}
	if u := 1 - q + q*math.Exp(a); u < 0.5 { // a sum of two positive terms: accurate
		return math.Log(u)
	}
	return math.Log1p(q * math.Expm1(a)) // near 0: no cancellation in 1 + …
}

// coinSource returns the generator of the canaries' coins and labels: privrand's
// AuditCoins stream, secure or of the seed (unrelated to the trainer's sampling and noise
// streams of the same seed).
func coinSource(seed *uint64) (*rand.Rand, error) {
	if seed != nil {
		return privrand.NewSeeded(*seed, privrand.AuditCoins).Rand(), nil
	}
	src, err := privrand.NewSecure(privrand.AuditCoins)
	if err != nil {
		return nil, fmt.Errorf("audit: the canaries' coins: %w", err)
	}
	return src.Rand(), nil
}

// canaryData is the training set of an audit: the real examples, flattened into the first
// realDim input coordinates with labels mod 2, then the included canaries. Canary i is the
// unit vector of coordinate realDim+i, which no real example uses, with its own label.
type canaryData struct {
	real             datasets.Dataset
	realLen, realDim int
	dim              int
	members          []int // included canaries, in order
	label            []int // label of every canary
}

func newCanaryData(ds datasets.Dataset, m int, members, label []int) *canaryData {
	d := datasets.Size(ds)
	return &canaryData{real: ds, realLen: ds.Len(), realDim: d, dim: d + m, members: members, label: label}
}

func (c *canaryData) Len() int        { return c.realLen + len(c.members) }
func (c *canaryData) Shape() []int    { return []int{c.dim} }
func (c *canaryData) NumClasses() int { return 2 }

func (c *canaryData) Example(i int, dst []float32) int {
	if len(dst) != c.dim {
		panic(fmt.Sprintf("audit: example buffer of %d values, want %d", len(dst), c.dim))
	}
	if i < c.realLen {
		y := c.real.Example(i, dst[:c.realDim])
		clear(dst[c.realDim:])
		return y % 2
	}
	k := c.members[i-c.realLen]
	clear(dst)
	dst[c.realDim+k] = 1
	return c.label[k]
}
