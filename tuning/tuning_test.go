package tuning

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/accountant"
)

// The numbers these tests expect come from the paper's formulas and closed forms written
// out here, or from the distributions themselves: none is copied from this package's
// output.

// gaussianSearch is a search whose every plan samples the whole trained-on set (q = 1),
// so that a trial's training is the Gaussian mechanism composed over its steps: its RDP
// at order α is α·steps/(2z²) (Mironov 2017, Proposition 7), and the score's α/(2σ²).
func gaussianSearch(trials accountant.Trials, scoreNoise float64, plans ...Plan) Privacy {
	return Privacy{Trials: trials, Examples: 100, Plans: plans, ScoreNoise: scoreNoise, Delta: 1e-5}
}

// rho is the Gaussian trial's RDP slope: the most over plans of steps/(2z²), z the plan's
// or the search's, plus 1/(2σ²).
func rho(p Privacy, z float64) float64 {
	r := 0.0
	for _, pl := range p.Plans {
		zz := pl.NoiseMultiplier
		if zz == 0 {
			zz = z
		}
		r = math.Max(r, float64(pl.Epochs)/(2*zz*zz)) // q = 1: one step per epoch
	}
	return r + 1/(2*p.ScoreNoise*p.ScoreNoise)
}

// tnbSearchRDP is Papernot & Steinke's Theorem 2 for a Gaussian trial (ε(λ) = ρλ) and
// K truncated negative binomial (η, γ) with mean m: at order λ,
// ρλ + (1+η)·min over λ̂ of [(1−1/λ̂)ρλ̂ + log(1/γ)/λ̂] + log(m)/(λ−1), λ̂ over the
// orders, then lowered to the least bound of the orders above (RDP grows with λ).
func tnbSearchRDP(orders []float64, r, eta, gamma, mean float64) []float64 {
	c := math.Inf(1)
	for _, lh := range orders {
		c = math.Min(c, (1-1/lh)*r*lh+math.Log(1/gamma)/lh)
	}
	out := make([]float64, len(orders))
	for i, l := range orders {
		out[i] = r*l + (1+eta)*c + math.Log(mean)/(l-1)
	}
	for i := len(out) - 2; i >= 0; i-- { // orders ascending
		out[i] = math.Min(out[i], out[i+1])
	}
	return out
}

// balleEpsilon is Balle et al. 2020's Theorem 21, minimised over the orders:
// ε = rdp(α) + log((α−1)/α) − (log δ + log α)/(α−1).
func balleEpsilon(orders, rdp []float64, delta float64) float64 {
	eps := math.Inf(1)
	for i, a := range orders {
		eps = math.Min(eps, rdp[i]+math.Log((a-1)/a)-(math.Log(delta)+math.Log(a))/(a-1))
	}
	return math.Max(eps, 0)
}

func close(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Abs(b) }

// TestAccountingGaussian: with q = 1 a trial is a Gaussian mechanism, so its RDP, the
// search's (Theorem 2) and both ε follow in closed form; the trial's curve is the most
// over the plans (two epochs at z = 2 against one at z = 1: the latter).
func TestAccountingGaussian(t *testing.T) {
	d, err := accountant.GeometricTrials(5) // η = 1, γ = 1/5
	if err != nil {
		t.Fatal(err)
	}
	p := gaussianSearch(d, 20, Plan{BatchSize: 100, Epochs: 2, NoiseMultiplier: 2}, Plan{BatchSize: 100, Epochs: 1})
	a, err := p.At(1)
	if err != nil {
		t.Fatal(err)
	}
	r := rho(p, 1) // max(2/8, 1/2) + 1/800
	if r != 0.5+1.0/800 {
		t.Fatalf("test's ρ %v", r)
	}
	orders := accountant.OrdersUpTo(256)
	if !slices.Equal(a.Orders, orders) {
		t.Fatalf("orders %v; want accountant.OrdersUpTo(256) by default", a.Orders)
	}
	for i, l := range orders {
		if !close(a.TrialRDP[i], r*l, 1e-12) {
			t.Fatalf("trial RDP at %g: %v, want ρλ = %v", l, a.TrialRDP[i], r*l)
		}
	}
	want := tnbSearchRDP(orders, r, 1, 0.2, 5)
	for i, l := range orders {
		if !close(a.SearchRDP[i], want[i], 1e-12) {
			t.Fatalf("search RDP at %g: %v, want %v (Theorem 2)", l, a.SearchRDP[i], want[i])
		}
	}
	if w := balleEpsilon(orders, want, 1e-5); !close(a.Search.Epsilon, w, 1e-12) {
		t.Errorf("search ε %v, want %v", a.Search.Epsilon, w)
	}
	trial := make([]float64, len(orders))
	for i, l := range orders {
		trial[i] = r * l
	}
	if w := balleEpsilon(orders, trial, 1e-5); !close(a.Trial.Epsilon, w, 1e-12) {
		t.Errorf("trial ε %v, want %v", a.Trial.Epsilon, w)
	}
	if !(a.Search.Epsilon > a.Trial.Epsilon) {
		t.Errorf("the search's ε %v is not above one trial's %v", a.Search.Epsilon, a.Trial.Epsilon)
	}
}

// TestCalibrate: the calibrated z meets the budget, within 0.25 %, and 0.99·z does not
// (each checked with the closed form); a budget at or below the scores' own ε
// (noiseless training's limit, ρ = 1/(2σ²)) is refused with a *ScoreFloorError.
func TestCalibrate(t *testing.T) {
	d, err := accountant.NegativeBinomialTrials(0.5, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	p := gaussianSearch(d, 10, Plan{BatchSize: 100, Epochs: 3})
	orders := accountant.OrdersUpTo(256)
	eps := func(z float64) float64 {
		return balleEpsilon(orders, tnbSearchRDP(orders, rho(p, z), 0.5, 0.1, d.Mean()), 1e-5)
	}
	a, err := p.Calibrate(3)
	if err != nil {
		t.Fatal(err)
	}
	z := a.NoiseMultiplier
	if got := eps(z); got > 3*(1+1e-9) || got < 3*0.9975 || !close(a.Search.Epsilon, got, 1e-12) {
		t.Errorf("z = %v: search ε %v (closed form %v); want ≤ 3 and within 0.25 %%", z, a.Search.Epsilon, got)
	}
	if eps(0.99*z) <= 3 {
		t.Errorf("z = %v is not the least noise for ε = 3: 0.99·z gives %v", z, eps(0.99*z))
	}
	floor := balleEpsilon(orders, tnbSearchRDP(orders, 1.0/200, 0.5, 0.1, d.Mean()), 1e-5)
	f, err := p.ScoreFloor()
	if err != nil || !close(f.Epsilon, floor, 1e-12) {
		t.Errorf("score floor %v (%v), want %v", f.Epsilon, err, floor)
	}
	_, err = p.Calibrate(floor * 0.999)
	var fe *ScoreFloorError
	if !errors.As(err, &fe) || !close(fe.Floor, floor, 1e-12) {
		t.Errorf("a budget below the scores' ε %v: %v", floor, err)
	}
}

// TestPrivacyRejects: bad plans, score noise and budgets are errors, not panics.
func TestPrivacyRejects(t *testing.T) {
	d, _ := accountant.GeometricTrials(2)
	good := gaussianSearch(d, 10, Plan{BatchSize: 10, Epochs: 1})
	for name, p := range map[string]Privacy{
		"no plans":      {Trials: d, Examples: 100, ScoreNoise: 10, Delta: 1e-5},
		"batch > n":     gaussianSearch(d, 10, Plan{BatchSize: 101, Epochs: 1}),
		"epochs 0":      gaussianSearch(d, 10, Plan{BatchSize: 10}),
		"σ 0":           gaussianSearch(d, 0, Plan{BatchSize: 10, Epochs: 1}),
		"σ NaN":         gaussianSearch(d, math.NaN(), Plan{BatchSize: 10, Epochs: 1}),
		"no examples":   {Trials: d, Plans: []Plan{{BatchSize: 1, Epochs: 1}}, ScoreNoise: 10, Delta: 1e-5},
		"bad trials":    gaussianSearch(accountant.Trials{}, 10, Plan{BatchSize: 10, Epochs: 1}),
		"δ 1":           {Trials: d, Examples: 100, Plans: good.Plans, ScoreNoise: 10, Delta: 1},
		"z 0 (no plan)": good,
	} {
		if _, err := p.At(0); err == nil {
			t.Errorf("%s: At accepted %+v", name, p)
		}
	}
	for _, eps := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := good.Calibrate(eps); err == nil {
			t.Errorf("Calibrate(%v) accepted", eps)
		}
	}
}

// TestCheckLedger: a trial's ledger within the plan passes, one step more is refused,
// as are a missing ledger and one with no order in common with the accounting.
func TestCheckLedger(t *testing.T) {
	d, _ := accountant.GeometricTrials(2)
	a, err := gaussianSearch(d, 10, Plan{BatchSize: 50, Epochs: 2}).At(1.5)
	if err != nil {
		t.Fatal(err)
	}
	var l accountant.Ledger
	if err := l.Record(0.5, 1.5, 4); err != nil { // 2 epochs of ⌈100/50⌉ steps
		t.Fatal(err)
	}
	if err := a.CheckLedger(&l); err != nil {
		t.Errorf("the planned spend: %v", err)
	}
	if err := l.Record(0.5, 1.5, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.CheckLedger(&l); err == nil {
		t.Error("one step over the plan passed")
	}
	if err := a.CheckLedger(nil); err == nil {
		t.Error("no ledger passed")
	}
	odd := accountant.NewLedger(accountant.WithOrders([]float64{1.05}))
	if err := a.CheckLedger(odd); err == nil {
		t.Error("a ledger without a common order passed")
	}
}

// fake returns a Runner that trains nothing: its count of correct predictions is
// correct(config), its ledger empty (within any plan).
func fake(correct func(Config) float64) Runner {
	return func(ctx context.Context, t Trial) (Outcome, error) {
		if err := ctx.Err(); err != nil {
			return Outcome{}, err
		}
		return Outcome{Correct: correct(t.Config), Ledger: &accountant.Ledger{}}, nil
	}
}

// searches runs seeded searches 1…n over space with trials d, and returns the number of
// trials each drew and every trial's scores and configurations.
func searches(t *testing.T, n int, d accountant.Trials, sigma float64, space Space, correct func(Config) float64) (ks []int, trials []Scored, results []*Result) {
	t.Helper()
	a, err := gaussianSearch(d, sigma, Plan{BatchSize: 100, Epochs: 1}).At(1)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		s := &Search{Space: space, Accounting: a, Seed: &seed, Train: fake(correct),
			OnDrawn: func(k int) { ks = append(ks, k) },
			OnTrial: func(sc Scored) { trials = append(trials, sc) },
		}
		res, err := s.Run(context.Background())
		var nt *NoTrialsError
		switch {
		case errors.As(err, &nt):
			if ks[len(ks)-1] != 0 {
				t.Fatalf("seed %d: %v after drawing %d trials", seed, err, ks[len(ks)-1])
			}
		case err != nil:
			t.Fatal(err)
		}
		results = append(results, res)
	}
	return ks, trials, results
}

// chiSquare is Pearson's statistic of counts against probabilities p (the last bin
// taking the rest of the mass).
func chiSquare(counts []int, p []float64) float64 {
	n := 0
	for _, c := range counts {
		n += c
	}
	rest, x := 1.0, 0.0
	for i, c := range counts {
		pi := rest
		if i < len(counts)-1 {
			pi = p[i]
		}
		rest -= pi
		e := float64(n) * pi
		x += (float64(c) - e) * (float64(c) - e) / e
	}
	return x
}

// TestTrialCountDistribution: over 3,000 seeded searches the number of trials follows
// its distribution's probability mass function, written from its definition: geometric
// with mean 3, P(K = k) = γ(1−γ)^(k−1), γ = 1/3; Poisson with mean 2 (K = 0 allowed, the
// search then releases nothing), P(K = k) = e^(−2)·2^k/k!. Pearson's χ² with 8 degrees
// of freedom stays below 26.12, its 0.999 quantile.
func TestTrialCountDistribution(t *testing.T) {
	space := Space{{Name: "lr", Values: []string{"1"}}}
	geo, _ := accountant.GeometricTrials(3)
	poi, _ := accountant.PoissonTrials(2)
	for _, c := range []struct {
		d   accountant.Trials
		min int
		pmf func(k int) float64
	}{
		{geo, 1, func(k int) float64 { return 1.0 / 3 * math.Pow(2.0/3, float64(k-1)) }},
		{poi, 0, func(k int) float64 {
			lg, _ := math.Lgamma(float64(k + 1))
			return math.Exp(-2 + float64(k)*math.Ln2 - lg)
		}},
	} {
		ks, _, _ := searches(t, 3000, c.d, 10, space, func(Config) float64 { return 0 })
		counts := make([]int, 9) // k = min … min+7, and the rest
		p := make([]float64, 9)
		for i := range p {
			p[i] = c.pmf(c.min + i)
		}
		for _, k := range ks {
			if k < c.min {
				t.Fatalf("%v: %d trials drawn", c.d, k)
			}
			counts[min(k-c.min, 8)]++
		}
		if x := chiSquare(counts, p); x > 26.12 {
			t.Errorf("%v: counts %v, χ² = %.1f against the pmf %v", c.d, counts, x, p)
		}
	}
}

// TestSelectionAndNoise: each trial's values are uniform over the space (χ², 2 degrees
// of freedom, below 13.82, the 0.999 quantile); the score noise is N(0, σ²) (mean within
// 4 standard errors, variance within 4 of its standard errors, 2σ⁴/(N−1)); every
// search releases the trial with the highest noisy score, and its Result says which.
func TestSelectionAndNoise(t *testing.T) {
	space := Space{{Name: "lr", Values: []string{"a", "b", "c"}}, {Name: "clip", Values: []string{"1"}}}
	counts := map[string]float64{"a": 100, "b": 130, "c": 160}
	const sigma = 10.0
	d, _ := accountant.GeometricTrials(4)
	_, trials, results := searches(t, 1500, d, sigma, space, func(c Config) float64 { return counts[c[0]] })
	seen := map[string]int{}
	var sum, sum2 float64
	for _, tr := range trials {
		seen[tr.Config[0]]++
		e := tr.Score - counts[tr.Config[0]]
		sum += e
		sum2 += e * e
	}
	n := float64(len(trials))
	if x := chiSquare([]int{seen["a"], seen["b"], seen["c"]}, []float64{1.0 / 3, 1.0 / 3}); x > 13.82 {
		t.Errorf("values drawn %v: χ² = %.1f", seen, x)
	}
	mean := sum / n
	variance := (sum2 - n*mean*mean) / (n - 1)
	if math.Abs(mean) > 4*sigma/math.Sqrt(n) || math.Abs(variance-sigma*sigma) > 4*sigma*sigma*math.Sqrt(2/(n-1)) {
		t.Errorf("score noise over %v trials: mean %v, variance %v; want 0 and σ² = %v", n, mean, variance, sigma*sigma)
	}
	i := 0
	for _, res := range results {
		run := trials[i : i+res.Trials]
		i += res.Trials
		best := run[0]
		for _, tr := range run[1:] {
			if tr.Score > best.Score {
				best = tr
			}
		}
		if best.Index != res.Best.Index || best.Score != res.Best.Score || !slices.Equal(best.Config, res.Best.Config) || res.Checkpoint != nil {
			t.Fatalf("released %+v; the best of %+v is %+v", res.Best, run, best)
		}
	}
	if i != len(trials) {
		t.Fatalf("%d trials reported, %d in the results", len(trials), i)
	}
}

// TestSearchSeeded: a seeded search repeats its trials, values, seeds and scores; two
// seeds give different ones; an unseeded search's trials are not seeded.
func TestSearchSeeded(t *testing.T) {
	space := Space{{Name: "lr", Values: []string{"1", "2", "4", "8"}}}
	d, _ := accountant.GeometricTrials(6)
	a, err := gaussianSearch(d, 10, Plan{BatchSize: 100, Epochs: 1}).At(1)
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed *uint64) []Scored {
		var out []Scored
		s := &Search{Space: space, Accounting: a, Seed: seed, Train: fake(func(Config) float64 { return 50 }), OnTrial: func(sc Scored) { out = append(out, sc) }}
		if _, err := s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out
	}
	s1, s2 := uint64(11), uint64(12)
	a1, b1, c2 := run(&s1), run(&s1), run(&s2)
	if len(a1) != len(b1) || !slices.EqualFunc(a1, b1, func(x, y Scored) bool {
		return x.Seed == y.Seed && x.Score == y.Score && slices.Equal(x.Config, y.Config) && x.Seeded
	}) {
		t.Errorf("seed 11 twice: %+v and %+v", a1, b1)
	}
	if len(a1) == len(c2) && a1[0].Seed == c2[0].Seed {
		t.Errorf("seeds 11 and 12 gave the same trials")
	}
	if u := run(nil); u[0].Seeded {
		t.Errorf("an unseeded search's trial says it is seeded")
	}
}

// TestSearchEnds: a cancelled context ends the search in its first trial with an
// *InterruptedError that unwraps to context.Canceled; a search whose every trial diverges
// releases nothing; a runner's own error comes back as it is; a bad count is refused.
func TestSearchEnds(t *testing.T) {
	space := Space{{Name: "lr", Values: []string{"1"}}}
	d, _ := accountant.GeometricTrials(2)
	a, err := gaussianSearch(d, 10, Plan{BatchSize: 100, Epochs: 1}).At(1)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := &Search{Space: space, Accounting: a, Seed: &seed, Train: fake(func(Config) float64 { return 1 })}
	_, err = s.Run(ctx)
	var ie *InterruptedError
	if !errors.As(err, &ie) || ie.Index != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	s.Train = fake(func(Config) float64 { return math.Inf(-1) })
	var ad *AllDivergedError
	if _, err := s.Run(context.Background()); !errors.As(err, &ad) {
		t.Errorf("every trial diverged: %v", err)
	}
	mine := errors.New("mine")
	s.Train = func(context.Context, Trial) (Outcome, error) { return Outcome{}, mine }
	if _, err := s.Run(context.Background()); err != mine {
		t.Errorf("runner's error: %v", err)
	}
	for _, c := range []float64{math.Inf(1), -1} {
		s.Train = fake(func(Config) float64 { return c })
		if _, err := s.Run(context.Background()); err == nil {
			t.Errorf("a count of %v correct predictions accepted", c)
		}
	}
	if _, err := (&Search{Accounting: a, Train: s.Train}).Run(context.Background()); err == nil {
		t.Error("a search without a space ran")
	}
	if _, err := TrainTrial(context.Background(), nil, 0); err == nil {
		t.Error("TrainTrial without a trainer or validation examples ran")
	}
}

func TestSpace(t *testing.T) {
	s := Space{{Name: "lr", Values: []string{"1", "2"}}, {Name: "clip", Values: []string{"a", "b", "c"}}}
	got := s.Configs()
	want := []Config{{"1", "a"}, {"1", "b"}, {"1", "c"}, {"2", "a"}, {"2", "b"}, {"2", "c"}}
	if !slices.EqualFunc(got, want, func(a, b Config) bool { return slices.Equal(a, b) }) {
		t.Errorf("Configs %v, want %v", got, want)
	}
	if d := s.Describe(Config{"2", "c"}); d != "lr=2 clip=c" {
		t.Errorf("Describe: %q", d)
	}
	if v := s.Values(Config{"2", "c"}); len(v) != 2 || v["lr"] != "2" || v["clip"] != "c" {
		t.Errorf("Values: %v", v)
	}
}
