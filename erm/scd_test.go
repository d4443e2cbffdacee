package erm

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/accountant"
)

// TestSCDNoiseMultipliers checks DP-SCD's calibration against digest §5.6's
// table (δ = 1e-3, q = L/N, T = epochs·N/L, orders up to 1024, computed by
// the digest's author with a TF-Privacy-style accountant, i.e. the classic
// RDP→DP conversion). 1% tolerance: the table has 4 digits and the
// bisection stops at a relative width of 1e-4.
func TestSCDNoiseMultipliers(t *testing.T) {
	cases := []struct {
		n, epochs, L int
		want         []float64 // ε = 0.1, 0.5, 1, 2 (0 = not tabulated)
	}{
		{347786, 50, 1000, []float64{14.23, 2.967, 1.625, 1.007}},
		{347786, 50, 100, []float64{0, 1.183, 0.830, 0.637}},
		{24420, 10, 1000, []float64{24.08, 5.001, 2.664, 1.538}},
		{24420, 10, 100, []float64{0, 1.716, 1.086, 0.798}},
		{6218, 10, 1000, []float64{47.62, 9.797, 5.102, 2.768}},
		{6218, 10, 100, []float64{0, 3.183, 1.758, 1.103}},
	}
	opts := []accountant.Option{accountant.WithOrders(accountant.OrdersUpTo(1024)), accountant.WithConversion(accountant.Classic)}
	for _, c := range cases {
		T := c.epochs * c.n / c.L
		for k, eps := range []float64{0.1, 0.5, 1, 2} {
			if c.want[k] == 0 {
				continue
			}
			sigma, achieved, err := scdNoise(float64(c.L)/float64(c.n), T, eps, 1e-3, opts)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(sigma-c.want[k]) > 0.01*c.want[k] || achieved > eps {
				t.Errorf("N=%d L=%d T=%d ε=%v: σ = %.4g (ε %.4g), table %v", c.n, c.L, T, eps, sigma, achieved, c.want[k])
			}
		}
	}
}

// TestSCDSensitivity checks Lemma 1: adding or removing one example changes
// a round's output [Δα; Δv] by at most √2·C, with the bound nearly attained
// when the example's step is clipped.
func TestSCDSensitivity(t *testing.T) {
	for _, loss := range []Loss{Logistic{}, Squared{}, Hinge{}} {
		p := normalizedProblem(t, loss, 60, 5, 0.01, 7)
		rng := NewNoise(3)
		worst := 0.0
		for trial := range 200 {
			// A random state reached by noisy rounds, then one noiseless round.
			st := newDualState(p)
			for i := range st.alpha {
				st.alpha[i] = rng.Float64() * p.Data.Y[i]
			}
			for j := range st.v {
				st.v[j] = rng.NormFloat64()
			}
			batch := []int{3, 17, 22, 40, 51}
			k := batch[trial%len(batch)]
			const clip = 0.05
			with, dvWith := roundDelta(st, batch, clip)
			var without []int
			for _, i := range batch {
				if i != k {
					without = append(without, i)
				}
			}
			// The neighbour lacks example k entirely (add/remove adjacency):
			// it makes no step for k and the other steps are unchanged, since
			// each is computed from the same (α, v) independently.
			w2, dvWithout := roundDelta(st, without, clip)
			var sq float64
			for _, i := range batch {
				d := with[i] - w2[i]
				sq += d * d
			}
			for j := range dvWith {
				d := dvWith[j] - dvWithout[j]
				sq += d * d
			}
			diff := math.Sqrt(sq)
			if diff > math.Sqrt2*clip*(1+1e-12) {
				t.Fatalf("%s: output moved by %v > √2·C = %v", loss.Name(), diff, math.Sqrt2*clip)
			}
			worst = max(worst, diff)
		}
		if worst < 0.99*math.Sqrt2*0.05 {
			t.Errorf("%s: largest change %v, expected the bound √2·C = %v to be nearly attained", loss.Name(), worst, math.Sqrt2*0.05)
		}
	}
}

// roundDelta returns the noiseless update of one DP-SCD round (σ' = L =
// batch size of the full batch 5) as a map from example to Δα_i, and Δv.
func roundDelta(st *dualState, batch []int, clip float64) (map[int]float64, []float64) {
	da := map[int]float64{}
	dv := make([]float64, len(st.v))
	for _, i := range batch {
		z := clipStep(st.zeta(i, 5, 1e-4, 0), clip)
		da[i] = z
		floats.AddScaled(dv, z, st.p.Data.X.RawRowView(i))
	}
	return da, dv
}

// TestSCDIsSDCA checks that with no noise, L = 1 and C = ∞, DP-SCD is
// SDCA: its iterates match textbook SDCA for ridge regression (Shalev-Shwartz
// & Zhang 2013, squared loss: Δα_i = (y_i − x_iᵀw − α_i)/(1 + ‖x_i‖²/(λn)),
// w += Δα_i x_i/(λn)) visiting the same examples, and its duality gap → 0.
func TestSCDIsSDCA(t *testing.T) {
	p := normalizedProblem(t, Squared{}, 200, 6, 0.02, 9)
	a := &SCD{Epsilon: math.Inf(1), Epochs: 30, BatchSize: 1, Clip: math.Inf(1), Sampling: Shuffled}
	st, _, err := a.run(p, NewNoise(4))
	if err != nil {
		t.Fatal(err)
	}
	// Replay the visiting order with the same generator.
	rng := NewNoise(4)
	bt := newBatcher(p.Len())
	n, lam := float64(p.Len()), p.Lambda
	alpha := make([]float64, p.Len())
	w := make([]float64, p.Dim())
	for range 30 * p.Len() {
		i := bt.next(rng, 1)[0]
		x := p.Data.X.RawRowView(i)
		da := (p.Data.Y[i] - floats.Dot(x, w) - alpha[i]) / (1 + floats.Dot(x, x)/(lam*n))
		alpha[i] += da
		floats.AddScaled(w, da/(lam*n), x)
	}
	theta := st.theta()
	for j := range w {
		if math.Abs(theta[j]-w[j]) > 1e-10*(1+math.Abs(w[j])) {
			t.Fatalf("θ[%d] = %v, SDCA %v", j, theta[j], w[j])
		}
	}
	for _, loss := range []Loss{Squared{}, Logistic{}, Hinge{}} {
		q := normalizedProblem(t, loss, 200, 6, 0.02, 9)
		st, _, err := (&SCD{Epsilon: math.Inf(1), Epochs: 200, BatchSize: 1, Clip: math.Inf(1)}).run(q, NewNoise(4))
		if err != nil {
			t.Fatal(err)
		}
		st.resync()
		primal, gap := st.gap()
		if gap > 1e-9*primal || gap < -1e-12 {
			t.Errorf("%s: duality gap %v at P = %v", loss.Name(), gap, primal)
		}
	}
}

// TestSCDConsistencyInExpectation checks Remark 1: E[v] = X E[α]. Over 1000
// noise seeds the mean of v − Xα must vanish within its standard error: each
// of the T rounds adds N(0, 2C²σ²) on every v_j minus X_B times N(0, 2C²σ²)
// on α_B, so Var(v − Xα)_j ≤ T·2C²σ²·(1 + Σ_{i∈B} x_ij²) ≤ T·2C²σ²·2 for
// unit rows. A v updated with a different step than α, or noise that is not
// centred, moves the mean by far more.
func TestSCDConsistencyInExpectation(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 100, 4, 0.05, 5)
	a := &SCD{Epsilon: 1, Delta: 1e-3, Epochs: 2, BatchSize: 10, Clip: 0.5}
	c, err := checkSCD(p, a.Epsilon, a.Delta, a.Epochs, a.BatchSize, a.Clip, p.Len())
	if err != nil {
		t.Fatal(err)
	}
	const seeds, sigma = 1000, 2.0
	d := p.Dim()
	mean := make([]float64, d)
	for s := range seeds {
		st := a.iterate(p, NewNoise(uint64(s)), c, sigma)
		xa := make([]float64, d)
		for i, al := range st.alpha {
			floats.AddScaled(xa, al, p.Data.X.RawRowView(i))
		}
		for j := range mean {
			mean[j] += (st.v[j] - xa[j]) / seeds
		}
	}
	sd := math.Sqrt(float64(c.rounds)*2*2) * c.clip * sigma
	for j, m := range mean {
		if se := sd / math.Sqrt(seeds); math.Abs(m) > 5*se {
			t.Errorf("E[v − Xα]_%d = %v, beyond 5 standard errors (%v)", j, m, 5*se)
		}
	}
}

// TestSCDReleasedNoise checks the noise of the released vectors
// statistically: one round from a fixed state with and without noise differ
// by N(0, 2C²σ²) on every touched α_j and every v_j. Over 2000 rounds the
// sample standard deviation of 2000·(L + d) differences is within 2% of
// √2·C·σ (its relative standard error is 1/√(2·60000) ≈ 0.3%).
func TestSCDReleasedNoise(t *testing.T) {
	p := normalizedProblem(t, Hinge{}, 500, 20, 0.01, 6)
	const clip, L = 0.3, 40
	q := float64(L) / float64(p.Len())
	sigma, _, err := scdNoise(q, 100, 1, 1e-3, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Sqrt2 * clip * sigma
	rng := NewNoise(8)
	bt := newBatcher(p.Len())
	base := newDualState(p)
	for i := range base.alpha {
		base.alpha[i] = 0.5 * p.Data.Y[i]
	}
	base.resync()
	zetas := make([]float64, L)
	dv := make([]float64, p.Dim())
	var sum, sumSq float64
	var count int
	for range 2000 {
		batch := append([]int(nil), bt.next(rng, L)...)
		quiet, noisy := cloneDual(base), cloneDual(base)
		quiet.scdRound(rng, batch, L, clip, 0, 1e-4, 0, zetas, dv)
		noisy.scdRound(rng, batch, L, clip, want, 1e-4, 0, zetas, dv)
		for _, i := range batch {
			e := noisy.alpha[i] - quiet.alpha[i]
			sum, sumSq, count = sum+e, sumSq+e*e, count+1
		}
		for j := range noisy.v {
			e := noisy.v[j] - quiet.v[j]
			sum, sumSq, count = sum+e, sumSq+e*e, count+1
		}
	}
	mean := sum / float64(count)
	std := math.Sqrt(sumSq/float64(count) - mean*mean)
	if math.Abs(std-want) > 0.02*want {
		t.Errorf("released noise std %v, want √2·C·σ = %v", std, want)
	}
	if math.Abs(mean) > 5*want/math.Sqrt(float64(count)) {
		t.Errorf("released noise mean %v", mean)
	}
}

func cloneDual(st *dualState) *dualState {
	c := *st
	c.alpha = append([]float64(nil), st.alpha...)
	c.v = append([]float64(nil), st.v...)
	return &c
}

// TestSCDReleasesV checks the released model is v/(λN), the noisy shared
// vector, and not Xα/(λN), which differs once noise is on.
func TestSCDReleasesV(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 200, 5, 0.05, 2)
	a := &SCD{Epsilon: 1, Delta: 1e-3, Epochs: 3, BatchSize: 20}
	res, err := a.Solve(p, NewNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := a.run(p, NewNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	lamN := p.Lambda * float64(p.Len())
	xa := make([]float64, p.Dim())
	for i, al := range st.alpha {
		floats.AddScaled(xa, al/lamN, p.Data.X.RawRowView(i))
	}
	var differs bool
	for j := range res.X {
		if math.Abs(res.X[j]-st.v[j]/lamN) > 1e-15*math.Abs(res.X[j]) {
			t.Fatalf("released θ[%d] = %v, want v/(λN) = %v", j, res.X[j], st.v[j]/lamN)
		}
		differs = differs || math.Abs(res.X[j]-xa[j]) > 1e-6
	}
	if !differs {
		t.Error("v/(λN) equals Xα/(λN) despite noise")
	}
	if res.Epsilon > 1 || res.Delta != 1e-3 {
		t.Errorf("spent (%v, %v), budget (1, 1e-3)", res.Epsilon, res.Delta)
	}
}

func TestSCDErrors(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 50, 3, 0.05, 1)
	bad := []*SCD{
		{Epsilon: 0, Delta: 1e-3},
		{Epsilon: 1, Delta: 0},
		{Epsilon: 1, Delta: 1},
		{Epsilon: 1, Delta: 1e-3, BatchSize: 51},
		{Epsilon: 1, Delta: 1e-3, Clip: math.Inf(1)},
		{Epsilon: math.NaN(), Delta: 1e-3},
	}
	for _, a := range bad {
		if _, err := a.Solve(p, NewNoise(1)); err == nil {
			t.Errorf("%+v accepted", *a)
		}
	}
	raw := *p
	rawData := *p.Data
	rawData.L2Bound = 0
	raw.Data = &rawData
	if _, err := (&SCD{Epsilon: 1, Delta: 1e-3}).Solve(&raw, NewNoise(1)); err == nil {
		t.Error("data without a norm bound accepted")
	}
}
