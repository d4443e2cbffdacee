package audit

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/privtrain/privtrain/internal/faults"
)

// The multi-run audit flags normalisation by the realised batch, which the one-run audit
// cannot see: the ledger claims ε = 1.5 and the audit's lower bound exceeds it.
func TestMultiRunFlagsRealisedBatch(t *testing.T) {
	faults.Enable(t, faults.RealisedBatch)
	seed := uint64(1)
	res, ms, err := runMulti(context.Background(), MultiConfig{Common: Common{Seed: &seed}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claimed ε = %.4g, lower bound %.3f (%d of %d right, %d in), %.1fs", res.Epsilon, res.EmpiricalEpsilonLowerBound, res.Correct, res.Guesses, res.GuessesIn, res.Seconds)
	if !res.Flagged || !(res.EmpiricalEpsilonLowerBound > res.Epsilon) {
		t.Errorf("realised-batch normalisation not flagged: lower bound %.4g ≤ claimed ε = %.4g", res.EmpiricalEpsilonLowerBound, res.Epsilon)
	}
	// The claim is the calibrated ε (the ledger of a run with the canary).
	if math.Abs(res.Epsilon-1.5) > 1e-3 {
		t.Errorf("ledger ε = %v, want the calibrated 1.5", res.Epsilon)
	}
	// A run without the canary has 3 examples, so its batch never holds 4; a run with it
	// holds all 4 in a given step with probability 1/16, in at least one of 100 steps with
	// probability 1 − (15/16)^100 ≈ 0.998. The runs that show a batch of 4 are exactly
	// the canary's (up to that 0.2 %), so the top of the ranking is all "in".
	missed := 0
	for r, in := range ms.in {
		switch {
		case !in && ms.maxK[r] > 3:
			t.Fatalf("run %d without the canary shows a batch of %d", r, ms.maxK[r])
		case in && ms.maxK[r] < 4:
			missed++
		}
	}
	if missed > 3 {
		t.Errorf("%d runs with the canary never showed a batch of 4 (expected 0.2 %% of %d)", missed, res.Included)
	}
}

// The estimated batch sizes follow the law of the mechanism: the correct one normalises
// every step by the expected batch b = 2; realised-batch normalisation divides by
// max(|B|, 1), with |B| ~ Binomial(3, 2/3) without the canary and Binomial(4, 1/2) with
// it (q = b/n as the trainer sets it).
func TestMultiRunBatchSizesMatchTheMechanism(t *testing.T) {
	seed := uint64(3)
	cfg := MultiConfig{Common: Common{Seed: &seed}, Runs: 60}
	t.Run("correct", func(t *testing.T) {
		_, ms, err := runMulti(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for w := range 2 {
			total := 0
			for _, c := range ms.kCount[w] {
				total += c
			}
			if total == 0 || ms.kCount[w][2] != total {
				t.Errorf("world %d: estimated batch sizes %v, want all %d steps at b = 2", w, ms.kCount[w], total)
			}
		}
	})
	t.Run("realised", func(t *testing.T) {
		faults.Enable(t, faults.RealisedBatch)
		_, ms, err := runMulti(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := [2][]float64{
			{0, 7.0 / 27, 12.0 / 27, 8.0 / 27, 0, 0},       // max(Binomial(3, 2/3), 1)
			{0, 5.0 / 16, 6.0 / 16, 4.0 / 16, 1.0 / 16, 0}, // max(Binomial(4, 1/2), 1)
		}
		for w := range 2 {
			total := 0
			for _, c := range ms.kCount[w] {
				total += c
			}
			for k, p := range want[w] {
				got := float64(ms.kCount[w][k]) / float64(total)
				se := math.Sqrt(p * (1 - p) / float64(total))
				if math.Abs(got-p) > 5*se+1e-12 {
					t.Errorf("world %d: fraction of steps with batch %d is %.4f, want %.4f ± %.4f", w, k, got, p, 5*se)
				}
			}
		}
	})
}

// The same audit does not flag the correct mechanism: the norm of the update is the same
// in every step, whatever the batch holds.
func TestMultiRunRealMechanismIsNotFlagged(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		if seed > 2 && testing.Short() {
			break
		}
		res, err := RunMulti(context.Background(), MultiConfig{Common: Common{Seed: &seed}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: claimed ε = %.4g, lower bound %.3f (%d of %d right)", seed, res.Epsilon, res.EmpiricalEpsilonLowerBound, res.Correct, res.Guesses)
		if res.Flagged || res.EmpiricalEpsilonLowerBound >= res.Epsilon {
			t.Errorf("seed %d: the intact mechanism at ε = %.4g gets a lower bound of %.4g", seed, res.Epsilon, res.EmpiricalEpsilonLowerBound)
		}
	}
}

// Noise off, every run with the canary moves the canary's row and no run without it does:
// the audit separates the runs perfectly, and reports the closed-form bound of its
// correct count.
func TestMultiRunNoiselessSeparatesPerfectly(t *testing.T) {
	faults.Enable(t, faults.NoNoise)
	seed := uint64(5)
	res, err := RunMulti(context.Background(), MultiConfig{Common: Common{Seed: &seed, Guesses: []int{40}}, Runs: 40})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Included - 20
	if d < 0 {
		d = -d
	}
	if res.Guesses != 40 || res.GuessesIn != 20 || res.Correct != 40-d {
		t.Fatalf("noiseless: %d of %d right with %d included, want %d", res.Correct, res.Guesses, res.Included, 40-d)
	}
	want, _ := EpsilonLowerBound(40, 40, 40-d, 0.975, 1e-5)
	if res.EmpiricalEpsilonLowerBound != want || !res.Flagged {
		t.Errorf("bound %v (flagged %v), want %v", res.EmpiricalEpsilonLowerBound, res.Flagged, want)
	}
}

func TestRunMultiRejectsBadConfig(t *testing.T) {
	for _, c := range []MultiConfig{
		{Runs: 1}, {Filler: -1}, {Common: Common{BatchSize: 2}, Filler: 4}, {Common: Common{BatchSize: 4}}, {Common: Common{Epochs: -1}}, {Dim: -3},
		{Common: Common{Epsilon: -1}}, {Common: Common{NoiseMultiplier: math.Inf(1)}}, {Common: Common{Delta: 1}}, {Common: Common{Clip: -1}}, {Common: Common{LearningRate: -1}},
		{Common: Common{Confidence: 1}}, {Common: Common{Guesses: []int{3}}}, {Common: Common{Guesses: []int{400}}},
	} {
		if _, err := RunMulti(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("RunMulti(%+v) = %v, want an ErrConfig", c, err)
		}
	}
}

func TestRunMultiStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunMulti(ctx, MultiConfig{}); !errors.Is(err, context.Canceled) {
		t.Errorf("RunMulti with a cancelled context = %v, want context.Canceled", err)
	}
}
