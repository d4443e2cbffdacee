package training_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// hub is an in-process stand-in for MPI_COMM_WORLD: size goroutines meet at every call;
// AllreduceSum adds the ranks' buffers in rank order, Broadcast copies the root's.
type hub struct {
	size    int
	mu      sync.Mutex
	cond    *sync.Cond
	arrived int
	gen     int
	bufs    [][]float64
	result  []float64
	calls   int // completed collective calls
}

func newHub(size int) *hub {
	h := &hub{size: size, bufs: make([][]float64, size)}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// meet waits until every rank has deposited buf, then lets done compute the result once.
func (h *hub) meet(rank int, buf []float64, done func()) []float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	gen := h.gen
	h.bufs[rank] = buf
	h.arrived++
	if h.arrived == h.size {
		done()
		h.arrived = 0
		h.gen++
		h.calls++
		h.cond.Broadcast()
	} else {
		for gen == h.gen {
			h.cond.Wait()
		}
	}
	return h.result
}

type rankOf struct {
	h    *hub
	rank int
}

func (r rankOf) Rank() int { return r.rank }
func (r rankOf) Size() int { return r.h.size }
func (r rankOf) AllreduceSum(buf []float64) error {
	res := r.h.meet(r.rank, slices.Clone(buf), func() {
		sum := make([]float64, len(buf))
		for _, b := range r.h.bufs {
			if len(b) != len(sum) {
				panic("allreduce buffers of different lengths")
			}
			for i, v := range b {
				sum[i] += v
			}
		}
		r.h.result = sum
	})
	copy(buf, res)
	return nil
}
func (r rankOf) Broadcast(buf []float64, root int) error {
	res := r.h.meet(r.rank, slices.Clone(buf), func() { r.h.result = slices.Clone(r.h.bufs[root]) })
	copy(buf, res)
	return nil
}

// distConfig is a small seeded DP run in float64: logistic regression on 600 embedded
// digits, batch 60 (q = 0.1), 2 epochs of 10 steps.
func distConfig(train datasets.Dataset, rule func() dpoptim.Rule, adaptive bool, change ...func(*training.TrainerConfig)) func() (*nn.Model, training.TrainerConfig) {
	return func() (*nn.Model, training.TrainerConfig) {
		m, err := nn.New(models.LogisticRegression(), 16, nn.WithSeed(3), nn.WithDType(nn.Float64))
		if err != nil {
			panic(err)
		}
		p := &training.Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1.1, Delta: 1e-5}
		if adaptive {
			p.Adaptive = &dpoptim.AdaptiveClip{TargetQuantile: 0.5}
		}
		cfg := training.TrainerConfig{
			Data:     training.Data{Train: train, Name: "mnist-600"},
			Rule:     rule(),
			Privacy:  p,
			Schedule: training.Schedule{BatchSize: 60, Epochs: 2},
			Seed:     seedPtr(7),
		}
		for _, c := range change {
			c(&cfg)
		}
		return m, cfg
	}
}

// runRanks runs size trainers built by build as the ranks of one job (restoring ck first
// when not nil) and returns rank 0's trainer and every rank's final parameters.
func runRanks(t *testing.T, size int, build func() (*nn.Model, training.TrainerConfig), ck *checkpoint.Training, stopAt int) (*training.Trainer, [][]float64, []error) {
	t.Helper()
	h := newHub(size)
	trainers := make([]*training.Trainer, size)
	for r := range size {
		m, cfg := build()
		cfg.Reducer = rankOf{h, r}
		if stopAt > 0 {
			cfg.Callbacks.OnStep = func(p training.StepProgress) error {
				if p.GlobalStep == stopAt {
					return errStop
				}
				return nil
			}
		}
		tr, err := training.NewTrainer(m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if ck != nil {
			if err := tr.Restore(ck); err != nil {
				t.Fatal(err)
			}
		}
		trainers[r] = tr
	}
	params := make([][]float64, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r, tr := range trainers {
		wg.Go(func() {
			_, errs[r] = tr.Run(context.Background())
			params[r] = make([]float64, tr.Model().NumParams())
			tr.Model().Params(params[r])
		})
	}
	wg.Wait()
	lastRanks = trainers
	return trainers[0], params, errs
}

// lastRanks are the trainers of runRanks' last job.
var lastRanks []*training.Trainer

var errStop = errors.New("stop here")

func oneProcess(t *testing.T, build func() (*nn.Model, training.TrainerConfig)) (*training.Trainer, []float64) {
	t.Helper()
	m, cfg := build()
	tr := newTrainer(t, m, cfg)
	run(t, tr)
	p := make([]float64, m.NumParams())
	m.Params(p)
	return tr, p
}

// maxDiff is the largest |a_i − b_i|.
func maxDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// distTolerance bounds the difference between a job's parameters and one process's: the
// two add the same clipped per-example gradients (each of norm ≤ C = 1) in a different
// order, so each step's sum differs by at most about b·2⁻⁵² ≈ 1e-14 (b ≈ 60 terms of
// size ≤ 1 in float64), scaled by lr/(qn) ≤ 1 into the parameters; the noise is the same
// bits. Twenty steps of a logistic regression (a contraction for these step sizes) keep
// that far below 1e-9, while a single example more or less in one step moves the
// parameters by about lr·C/(qn) ≈ 1e-2: the tolerance separates rounding from a wrong
// sample by seven orders of magnitude.
const distTolerance = 1e-9

// TestDistributedMatchesOneProcess: N ranks train the seeded one-process run: the same
// plan, the same ledger (ε), and the same final parameters, bit for bit with N = 1 and up
// to summation-order rounding (distTolerance) with N = 2 and 3, identical on every rank;
// with DP-SGD, DP-Adam, adaptive clipping (whose count is added across ranks and whose
// C_t rank 0 broadcasts) and augmentation multiplicity 4 (whose views each rank draws from
// the same key), and shuffled batches with a parameter average.
func TestDistributedMatchesOneProcess(t *testing.T) {
	train, _ := embedded(t, 600)
	cases := []struct {
		name     string
		rule     func() dpoptim.Rule
		adaptive bool
		change   func(*training.TrainerConfig)
	}{
		{"dp-sgd", func() dpoptim.Rule { return dpoptim.NewSGD(dpoptim.Constant(0.5)) }, false, nil},
		{"dp-adam", func() dpoptim.Rule { return dpoptim.NewAdam(dpoptim.Constant(0.01)) }, false, nil},
		{"dp-sgd-adaptive", func() dpoptim.Rule { return dpoptim.NewSGD(dpoptim.Constant(0.5)) }, true, nil},
		{"dp-sgd-augment-4", func() dpoptim.Rule { return dpoptim.NewSGD(dpoptim.Constant(0.5)) }, false, func(c *training.TrainerConfig) {
			c.Augmentation.Multiplicity, c.Augmentation.Augment = 4, datasets.Augment{Crop: true, Pad: 2}
		}},
		{"dp-sgd-shuffle-ema", func() dpoptim.Rule { return dpoptim.NewSGD(dpoptim.Constant(0.5)) }, false, func(c *training.TrainerConfig) {
			c.Schedule.Sampling, c.Averaging.EMA = training.Shuffle, 0.9 // batches not in increasing order; an average
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var change []func(*training.TrainerConfig)
			if c.change != nil {
				change = append(change, c.change)
			}
			build := distConfig(train, c.rule, c.adaptive, change...)
			want, wantParams := oneProcess(t, build)
			wantSpent, err := want.Spent()
			if err != nil {
				t.Fatal(err)
			}
			for _, size := range []int{1, 2, 3} {
				tr, params, errs := runRanks(t, size, build, nil, 0)
				for r, err := range errs {
					if err != nil {
						t.Fatalf("N = %d, rank %d: %v", size, r, err)
					}
				}
				others := lastRanks
				if fmt.Sprintf("%+v", tr.Plan()) != fmt.Sprintf("%+v", want.Plan()) {
					t.Errorf("N = %d: plan %+v, one process %+v", size, tr.Plan(), want.Plan())
				}
				spent, err := tr.Spent()
				if err != nil || spent != wantSpent {
					t.Errorf("N = %d: rank 0 spent %+v (%v), one process %+v", size, spent, err, wantSpent)
				}
				if tr.Steps() != want.Steps() {
					t.Errorf("N = %d: %d steps, one process %d", size, tr.Steps(), want.Steps())
				}
				if size > 1 {
					if _, err := others[1].Checkpoint(); err == nil {
						t.Errorf("N = %d: rank 1 wrote a checkpoint; its ledger is empty", size)
					}
					if sp, err := others[1].Spent(); err != nil || !math.IsInf(sp.Epsilon, 1) {
						t.Errorf("N = %d: rank 1 reports ε = %v (%v), want +Inf (it records nothing)", size, sp.Epsilon, err)
					}
				}
				for r := range size {
					if !slices.Equal(params[r], params[0]) {
						t.Errorf("N = %d: rank %d's parameters differ from rank 0's", size, r)
					}
				}
				d := maxDiff(params[0], wantParams)
				if size == 1 && d != 0 {
					t.Errorf("N = 1: parameters differ from one process's by %g, want bit for bit", d)
				}
				if d > distTolerance {
					t.Errorf("N = %d: parameters differ from one process's by %g > %g", size, d, distTolerance)
				}
				if maxDiff(params[0], make([]float64, len(params[0]))) == 0 {
					t.Fatal("all parameters are zero: nothing trained")
				}
			}
		})
	}
}

// TestDistributedResumesUnderAnotherN: a job of 2 ranks stops after step 7, its rank 0's
// checkpoint resumes in a job of 3 ranks, and the result is the one-process run's.
func TestDistributedResumesUnderAnotherN(t *testing.T) {
	train, _ := embedded(t, 600)
	build := distConfig(train, func() dpoptim.Rule { return dpoptim.NewAdam(dpoptim.Constant(0.01)) }, false)
	_, wantParams := oneProcess(t, build)
	tr, _, errs := runRanks(t, 2, build, nil, 7)
	for r, err := range errs {
		if !errors.Is(err, errStop) {
			t.Fatalf("rank %d: %v, want the stop at step 7", r, err)
		}
	}
	ck, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if ck.Step != 7 {
		t.Fatalf("checkpoint at step %d, want 7", ck.Step)
	}
	tr3, params, errs := runRanks(t, 3, build, ck, 0)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("N = 3, rank %d: %v", r, err)
		}
	}
	if tr3.Steps() != 20 {
		t.Errorf("%d steps after the resume, want 20", tr3.Steps())
	}
	if d := maxDiff(params[0], wantParams); d > distTolerance {
		t.Errorf("resumed under N = 3: parameters differ from one process's by %g > %g", d, distTolerance)
	}
}

// TestDistributedShardsPartition: with N = 2, 3, 7 ranks (7 does not divide n = 600)
// non-private training, whose steps are deterministic, matches one process's: an example
// dropped or counted twice by the shards would move the parameters by about lr/b·‖g‖ ≈
// 1e-2. Each step is one allreduce and one broadcast, after the start's two calls.
func TestDistributedShardsPartition(t *testing.T) {
	train, _ := embedded(t, 600)
	build := func() (*nn.Model, training.TrainerConfig) {
		m, cfg := distConfig(train, func() dpoptim.Rule { return dpoptim.NewSGD(dpoptim.Constant(0.5)) }, false)()
		cfg.Privacy, cfg.Schedule.Epochs = nil, 1
		return m, cfg
	}
	_, want := oneProcess(t, build)
	for _, size := range []int{2, 3, 7} {
		_, params, errs := runRanks(t, size, build, nil, 0)
		for r, err := range errs {
			if err != nil {
				t.Fatalf("N = %d, rank %d: %v", size, r, err)
			}
		}
		if d := maxDiff(params[0], want); d > distTolerance {
			t.Errorf("N = %d: parameters differ from one process's by %g > %g", size, d, distTolerance)
		}
	}
	h := newHub(2)
	var wg sync.WaitGroup
	for r := range 2 {
		m, cfg := build()
		cfg.Reducer = rankOf{h, r}
		tr := newTrainer(t, m, cfg)
		wg.Go(func() {
			if _, err := tr.Run(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if want := 2 + 2*10; h.calls != want {
		t.Errorf("%d collective calls for 10 steps, want %d", h.calls, want)
	}
}

// TestDistributedRefusesDisagreeingRanks: ranks whose seeds (or data) differ stop together
// with ErrRanks before the first step, instead of training on a sample that is not one
// Poisson sample.
func TestDistributedRefusesDisagreeingRanks(t *testing.T) {
	train, _ := embedded(t, 600)
	build := distConfig(train, func() dpoptim.Rule { return dpoptim.NewSGD(dpoptim.Constant(0.5)) }, false)
	h := newHub(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		m, cfg := build()
		cfg.Seed = seedPtr(uint64(10 + r))
		cfg.Reducer = rankOf{h, r}
		tr := newTrainer(t, m, cfg)
		wg.Go(func() { _, errs[r] = tr.Run(context.Background()) })
	}
	wg.Wait()
	for r, err := range errs {
		if !errors.Is(err, training.ErrRanks) {
			t.Errorf("rank %d: %v, want ErrRanks", r, err)
		}
	}
	if tr, _, _ := runRanks(t, 1, build, nil, 0); tr.Steps() != 20 {
		t.Errorf("one rank: %d steps", tr.Steps())
	}
}
