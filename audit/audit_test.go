package audit

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/privtrain/privtrain/internal/faults"
)

// The real mechanism must not be flagged: a (ε, δ)-DP run gives a bound above its ε with
// probability at most 1 − confidence, and these seeds are fixed.
func TestRealMechanismIsNotFlagged(t *testing.T) {
	for _, eps := range []float64{2, 4} {
		if eps > 2 && testing.Short() {
			continue
		}
		for seed := uint64(1); seed <= 5; seed++ {
			res, err := Run(context.Background(), Config{Common: Common{Epsilon: eps, Seed: &seed}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("ε = %.4g, seed %d: lower bound %.3f (%d of %d right)", res.Epsilon, seed, res.EmpiricalEpsilonLowerBound, res.Correct, res.Guesses)
			if res.Flagged || res.EmpiricalEpsilonLowerBound >= res.Epsilon {
				t.Errorf("seed %d: the intact mechanism at ε = %.4g gets a lower bound of %.4g", seed, res.Epsilon, res.EmpiricalEpsilonLowerBound)
			}
			if res.Epsilon > eps*(1+1e-6) {
				t.Errorf("ledger reports ε = %v for a plan calibrated to %v", res.Epsilon, eps)
			}
		}
	}
}

// Each broken mechanism must be flagged: its lower bound exceeds the ε its ledger claims.
func TestBrokenMechanismsAreFlagged(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault faults.Fault
		cfg   Config
	}{
		{"clipping off", faults.NoClip, Config{Common: Common{Epsilon: 2}}},
		{"noise off", faults.NoNoise, Config{Common: Common{Epsilon: 2}}},
		{"noise divided by 10", faults.NoiseDiv10, Config{Common: Common{Epsilon: 2}}},
		// Resumed 5 steps before the end of a 440-step plan, the ledger claims 5 steps' ε.
		{"ledger reset on resume", faults.LedgerReset, Config{Common: Common{Epsilon: 4, Epochs: 40}, ResumeAfter: 435}},
	} {
		t.Run(c.name, func(t *testing.T) {
			faults.Enable(t, c.fault)
			seed := uint64(1)
			c.cfg.Seed = &seed
			res, err := Run(context.Background(), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("claimed ε = %.4g, lower bound %.3f (%d of %d right)", res.Epsilon, res.EmpiricalEpsilonLowerBound, res.Correct, res.Guesses)
			if !res.Flagged {
				t.Errorf("not flagged: lower bound %.4g ≤ claimed ε = %.4g", res.EmpiricalEpsilonLowerBound, res.Epsilon)
			}
		})
	}
}

// The same resumed plan with the ledger intact: the checkpoint carries the ledger, so the
// claim covers all 440 steps and the audit stays below it.
func TestResumedRunIsNotFlagged(t *testing.T) {
	if testing.Short() {
		t.Skip("three 440-step audits")
	}
	for seed := uint64(1); seed <= 3; seed++ {
		res, err := Run(context.Background(), Config{Common: Common{Epsilon: 4, Epochs: 40, Seed: &seed}, ResumeAfter: 435})
		if err != nil {
			t.Fatal(err)
		}
		if res.Steps != 440 || res.Epsilon < 4*(1-1e-3) || res.Flagged {
			t.Errorf("seed %d: %d steps, claimed ε = %.4g, lower bound %.4g; want 440 steps, ε = 4, not flagged", seed, res.Steps, res.Epsilon, res.EmpiricalEpsilonLowerBound)
		}
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Canaries: 1}, {Common: Common{Epochs: -1}}, {Common: Common{Epsilon: -1}}, {Common: Common{Delta: 1}}, {Common: Common{Delta: -1e-5}}, {Common: Common{Clip: -1}},
		{Common: Common{Confidence: 1}}, {Common: Common{Confidence: -0.5}}, {Common: Common{Guesses: []int{3}}}, {Common: Common{Guesses: []int{2000}}},
		{Canaries: MaxCanaries + 1}, {Canaries: 1e9}, // issue 23 item 9: refused before allocating
		{ResumeAfter: -1}, {ResumeAfter: 1 << 20}, {Common: Common{BatchSize: -2}}, {Common: Common{BatchSize: 1 << 20}}, {Common: Common{LearningRate: -1}},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("Run(%+v) = %v, want an ErrConfig", c, err)
		}
	}
}

// The score really is the alignment with each canary's direction: with noise off, every
// included canary scores above every excluded one (which scores exactly 0), so guessing
// "in" for the top 100 and "out" for the bottom 100 of 200 is wrong only where the coins
// did not split 100/100: 200 − |included − 100| right.
func TestNoiselessAuditSeparatesPerfectly(t *testing.T) {
	faults.Enable(t, faults.NoNoise)
	seed := uint64(7)
	res, err := Run(context.Background(), Config{Common: Common{Seed: &seed, Guesses: []int{200}}, Canaries: 200})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Included - 100
	if d < 0 {
		d = -d
	}
	if res.Guesses != 200 || res.GuessesIn != 100 || res.Correct != 200-d {
		t.Fatalf("noiseless: %d of %d right with %d included, want %d", res.Correct, res.Guesses, res.Included, 200-d)
	}
	want, _ := EpsilonLowerBound(200, 200, 200-d, 0.975, 1e-5) // 2 rules: 100/100 and 200 "in"
	if res.EmpiricalEpsilonLowerBound != want {
		t.Errorf("bound %v, want %v", res.EmpiricalEpsilonLowerBound, want)
	}
}

// The scores follow the distribution the DP-SGD analysis predicts for a canary that adds
// exactly C in a fixed direction each time it is sampled: in units of one inclusion, an
// included canary scores Binomial(T, q) + N(0, z²T), an excluded one N(0, z²T). This checks
// end to end that the trainer samples with q, clips each canary to C, adds noise z·C and
// divides by the expected batch, and that the canaries stay in their linear regime.
func TestScoresMatchTheMechanism(t *testing.T) {
	seed := uint64(11)
	res, cs, err := run(context.Background(), Config{Common: Common{Seed: &seed, Epsilon: 3}, Canaries: 4000})
	if err != nil {
		t.Fatal(err)
	}
	T, q, z := float64(res.Steps), res.SampleRate, res.NoiseMultiplier
	var sum, sq [2]float64
	var cnt [2]float64
	for i, s := range cs.accumulated {
		k := 0
		if cs.in[i] {
			k = 1
		}
		x := s / cs.unit
		sum[k] += x
		sq[k] += x * x
		cnt[k]++
	}
	for k, name := range []string{"excluded", "included"} {
		wantMean, wantVar := 0.0, z*z*T
		if k == 1 {
			wantMean, wantVar = q*T, z*z*T+T*q*(1-q)
		}
		mean := sum[k] / cnt[k]
		variance := sq[k]/cnt[k] - mean*mean
		// 4 standard errors of the mean; the sample variance of ~2000 normals is within
		// 4·√(2/2000) ≈ 13 % of the truth.
		t.Logf("%s: mean %.3f (want %.3f), variance %.3f (want %.3f)", name, mean, wantMean, variance, wantVar)
		if se := math.Sqrt(wantVar / cnt[k]); math.Abs(mean-wantMean) > 4*se {
			t.Errorf("%s canaries: mean score %.3f, want %.3f ± %.3f", name, mean, wantMean, 4*se)
		}
		if r := variance / wantVar; r < 0.87 || r > 1.13 {
			t.Errorf("%s canaries: score variance %.3f, want %.3f (ratio %.3f)", name, variance, wantVar, r)
		}
	}
}

func TestLogMixture(t *testing.T) {
	for _, q := range []float64{1e-4, 0.1, 0.5, 1} {
		for _, a := range []float64{-30, -1, -1e-9, 0, 1e-9, 0.5, 3, 20} {
			want := math.Log(1 - q + q*math.Exp(a))
			if got := logMixture(q, a); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("logMixture(%v, %v) = %v, want %v", q, a, got, want)
			}
		}
	}
	// Far beyond float64's exp: log(q·e^a) = a + log q.
	if got, want := logMixture(0.01, 1000), 1000+math.Log(0.01); math.Abs(got-want) > 1e-9 {
		t.Errorf("logMixture(0.01, 1000) = %v, want %v", got, want)
	}
}

// The names are cmd/audit's -score values; a value outside the enum names itself.
func TestScoreString(t *testing.T) {
	for s, want := range map[Score]string{StepLikelihood: "step-likelihood", AccumulatedUpdate: "accumulated-update", 2: "Score(2)", -1: "Score(-1)"} {
		if got := s.String(); got != want {
			t.Errorf("Score(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}
