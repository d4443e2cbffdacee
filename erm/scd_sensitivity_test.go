package erm

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm/data"
)

// releasedDiff is the L2 distance between two states' [α; v].
func releasedDiff(a, b *dualState) float64 {
	var sq float64
	for i := range a.alpha {
		d := a.alpha[i] - b.alpha[i]
		sq += d * d
	}
	for j := range a.v {
		d := a.v[j] - b.v[j]
		sq += d * d
	}
	return math.Sqrt(sq)
}

// scdRoundWithout runs one noiseless DP-SCD round as the solver runs it (its σ', its
// clip) on the batch without example x and on the batch with it, from the same state and
// with the same sampling coins for every other example (add/remove adjacency: x's coin
// came up), and returns the distance between the two released [α; v].
func scdNeighbourDiff(st *dualState, c scdConfig, batch []int, x int) float64 {
	var without []int
	for _, i := range batch {
		if i != x {
			without = append(without, i)
		}
	}
	with, wo := cloneDual(st), cloneDual(st)
	zetas := make([]float64, len(batch))
	dv := make([]float64, len(st.v))
	with.scdRound(nil, batch, scdSigmaPrime(c, batch), c.clip, 0, 1e-4, 0, zetas, dv)
	wo.scdRound(nil, without, scdSigmaPrime(c, without), c.clip, 0, 1e-4, 0, zetas[:len(without)], dv)
	return releasedDiff(with, wo)
}

// TestSCDSensitivityPoissonBatch (issue 23 item 8): with Poisson sampling the realised
// batch holds x or not, and before the fix σ' was its size, so adding x changed every
// other step of the round too. Lemma 1's √2·C, which the noise is sized for, must bound
// the change for any realised batch. The adversarial case: every example is e₁, the
// others' steps just below C and σ' ≫ λN, so that each moves with σ' in the same
// direction as x's own clipped step (measured before the fix: 2.1·C > √2·C).
func TestSCDSensitivityPoissonBatch(t *testing.T) {
	const b, clip = 20, 1.0
	n := b + 1
	x := mat.NewDense(n, 2, nil)
	y := make([]float64, n)
	for i := range n {
		x.Set(i, 0, 1)
		y[i] = 0.95 * clip * (1 + b) // ζ = y/(1 + σ'/(λN)) = 0.95·C at σ' = b, λN = 1
	}
	y[n-1] = -100 // x: a step clipped to −C
	p := &Problem{Data: &data.Dataset{X: x, Y: y, L2Bound: 1}, Loss: Squared{}, Lambda: 1 / float64(n)}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	// The solver's L is the expected batch; the realised one is L+1 (x sampled) or L.
	c := scdConfig{batch: b, clip: clip}
	if d := scdNeighbourDiff(newDualState(p), c, all, n-1); d > math.Sqrt2*clip*(1+1e-12) {
		t.Errorf("adversarial batch: released [α; v] moved by %.4g·C > √2·C", d/clip)
	}

	// Random states and realised batches of every size, three losses.
	for _, loss := range []Loss{Logistic{}, Squared{}, Hinge{}} {
		p := normalizedProblem(t, loss, 60, 5, 0.01, 7)
		rng := NewNoise(5)
		for trial := range 300 {
			st := newDualState(p)
			for i := range st.alpha {
				st.alpha[i] = rng.Float64() * p.Data.Y[i]
			}
			for j := range st.v {
				st.v[j] = rng.NormFloat64()
			}
			c := scdConfig{batch: 1 + trial%10, clip: 0.05}
			batch := poissonSample(rng, p.Len(), float64(c.batch)/float64(p.Len()), nil)
			if len(batch) == 0 {
				continue
			}
			x := batch[rng.IntN(len(batch))]
			if d := scdNeighbourDiff(st, c, batch, x); d > math.Sqrt2*c.clip*(1+1e-12) {
				t.Fatalf("%s trial %d: L = %d, realised %d: moved by %.4g·C > √2·C", loss.Name(), trial, c.batch, len(batch), d/c.clip)
			}
		}
	}
}

// seqNeighbourDiff is scdNeighbourDiff for a seqDP-SCD round (x at its place in the
// batch's order, the later steps seeing it).
func seqNeighbourDiff(st *dualState, maxBatch int, clip float64, batch []int, x int) float64 {
	var without []int
	for _, i := range batch {
		if i != x {
			without = append(without, i)
		}
	}
	with, wo := cloneDual(st), cloneDual(st)
	with.seqRound(batch, maxBatch, clip, 1e-4, 0)
	wo.seqRound(without, maxBatch, clip, 1e-4, 0)
	return releasedDiff(with, wo)
}

// TestSeqSCDCalibrationCoversRealisedBatch (issue 23 item 8): Lemma 5 bounds a round of
// b sequential steps by 2C√(b(b+1)); the noise was sized for the nominal L while a
// Poisson batch can be larger, so those rounds were under-noised. Every batch size a
// round processes must be covered by the sensitivity its noise is sized for, and the
// change one added example makes, measured by brute force on random states and
// realised Poisson batches, must stay below it.
func TestSeqSCDCalibrationCoversRealisedBatch(t *testing.T) {
	for _, c := range []struct{ n, L int }{{120, 10}, {60, 1}, {1000, 100}, {50, 50}} {
		maxBatch, sens := seqPlan(Poisson, c.n, c.L, 0.1, true)
		for b := 0; b <= min(maxBatch, c.n); b++ {
			if need := seqSensitivity(0.1, b); need > sens*(1+1e-12) {
				t.Errorf("N = %d, L = %d: a realised batch of %d is processed (up to %d), Lemma 5 needs %.4g, the noise is sized for %.4g",
					c.n, c.L, b, maxBatch, need, sens)
				break
			}
		}
		// Without noise nothing is capped: non-private runs are unchanged.
		if m, _ := seqPlan(Poisson, c.n, c.L, 0.1, false); m < c.n {
			t.Errorf("N = %d, L = %d: without noise batches are capped at %d", c.n, c.L, m)
		}
		// Shuffled batches hold exactly L: nothing changes for them.
		if m, s := seqPlan(Shuffled, c.n, c.L, 0.1, true); m != c.L || s != seqSensitivity(0.1, c.L) {
			t.Errorf("N = %d, L = %d shuffled: cap %d, sensitivity %v", c.n, c.L, m, s)
		}
	}
	for _, loss := range []Loss{Logistic{}, Squared{}, Hinge{}} {
		p := normalizedProblem(t, loss, 60, 5, 0.01, 7)
		rng := NewNoise(6)
		worst := 0.0
		for trial := range 300 {
			st := newDualState(p)
			for i := range st.alpha {
				st.alpha[i] = rng.Float64() * p.Data.Y[i]
			}
			for j := range st.v {
				st.v[j] = rng.NormFloat64()
			}
			L := 1 + trial%5
			const clip = 0.05
			maxBatch, sens := seqPlan(Poisson, p.Len(), L, clip, true)
			batch := poissonSample(rng, p.Len(), float64(L)/float64(p.Len()), nil)
			if len(batch) == 0 {
				continue
			}
			x := batch[rng.IntN(len(batch))]
			d := seqNeighbourDiff(st, maxBatch, clip, batch, x)
			if d > sens*(1+1e-12) {
				t.Fatalf("%s trial %d: L = %d, realised %d: moved by %.4g > %.4g", loss.Name(), trial, L, len(batch), d, sens)
			}
			worst = max(worst, d/sens)
		}
		t.Logf("%s: largest change %.3g of the sensitivity", loss.Name(), worst)
	}
}
