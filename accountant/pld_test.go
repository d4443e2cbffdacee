package accountant

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// Test-side closed forms, written independently of pld_dist.go.

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// gaussianDelta is the exact δ(ε) of the Gaussian mechanism with
// sensitivity 1 and noise σ (Balle and Wang 2018, Theorem 8):
// Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ).
func gaussianDelta(sigma, eps float64) float64 {
	return normCDF(1/(2*sigma)-eps*sigma) - math.Exp(eps)*normCDF(-1/(2*sigma)-eps*sigma)
}

// gaussianEpsilon inverts gaussianDelta by bisection.
func gaussianEpsilon(sigma, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for gaussianDelta(sigma, hi) > delta {
		hi *= 2
	}
	if gaussianDelta(sigma, 0) <= delta {
		return 0
	}
	for range 200 {
		mid := (lo + hi) / 2
		if gaussianDelta(sigma, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// sampledGaussianDelta is the exact hockey-stick divergence of one step of
// the Poisson-subsampled Gaussian mechanism: remove is
// H_{e^ε}((1−q)N(0,σ²)+qN(1,σ²) ‖ N(0,σ²)), add the swapped pair. Both
// follow from the set {x : P(x) > e^ε Q(x)}, a half-line.
func sampledGaussianDelta(q, sigma, eps float64, add bool) float64 {
	s2 := sigma * sigma
	mix := func(x float64, tailAbove bool) (p0, p1 float64) { // N(0,σ²), N(1,σ²) masses beyond x
		if tailAbove {
			return normCDF(-x / sigma), normCDF(-(x - 1) / sigma)
		}
		return normCDF(x / sigma), normCDF((x - 1) / sigma)
	}
	if !add {
		// (1−q) + q e^{(2x−1)/(2σ²)} > e^ε  ⇔  x > x*.
		r := (math.Exp(eps) - 1 + q) / q
		if r <= 0 {
			return 1 - math.Exp(eps)
		}
		x := s2*math.Log(r) + 0.5
		n0, n1 := mix(x, true)
		return (1-q)*n0 + q*n1 - math.Exp(eps)*n0
	}
	// 1 > e^ε((1−q) + q e^{(2x−1)/(2σ²)})  ⇔  x < x*.
	r := (math.Exp(-eps) - 1 + q) / q
	if r <= 0 {
		return 0
	}
	x := s2*math.Log(r) + 0.5
	n0, n1 := mix(x, false)
	return n0 - math.Exp(eps)*((1-q)*n0+q*n1)
}

// The discrete PLD of one step reproduces the exact δ(ε) at its grid points
// (up to the tail mass at +∞ and rounding) and lies above it in between.
func TestPLDConnectTheDots(t *testing.T) {
	for _, c := range []struct{ q, z float64 }{
		{256.0 / 60000, 1.1}, {0.256, 4.3637}, {0.01, 0.8}, {1, 1}, {0.5, 2}, {0.9, 0.6},
	} {
		for _, add := range []bool{false, true} {
			const d = 1e-3
			x := subsampledGaussianPLD(c.q, c.z, d, add, 1e-15)
			mass := x.inf
			for _, v := range x.p {
				if v < 0 || math.IsNaN(v) {
					t.Fatalf("q=%v z=%v add=%v: mass %v", c.q, c.z, add, v)
				}
				mass += v
			}
			if math.Abs(mass-1) > 1e-12 {
				t.Errorf("q=%v z=%v add=%v: total mass %v", c.q, c.z, add, mass)
			}
			for i := 0; i < len(x.p); i += 13 {
				eps := float64(x.lo+i) * d
				exact := sampledGaussianDelta(c.q, c.z, eps, add)
				got := x.delta(eps, d)
				if math.Abs(got-exact) > 1e-12+1e-8*exact || got < exact-1e-13 {
					t.Errorf("q=%v z=%v add=%v: δ(%v) = %v at a grid point, exact %v", c.q, c.z, add, eps, got, exact)
					break
				}
				for _, f := range []float64{0.25, 0.5, 0.9} { // between grid points: above
					e := eps + f*d
					if got, exact := x.delta(e, d), sampledGaussianDelta(c.q, c.z, e, add); got < exact-1e-13 {
						t.Errorf("q=%v z=%v add=%v: δ(%v) = %v below exact %v", c.q, c.z, add, e, got, exact)
					}
				}
			}
		}
	}
}

// Google dp_accounting's PLDAccountant (pessimistic, value discretisation
// 1e-4) on the plans; ours must lie within −0.5 % and +2 %.
func TestPLDReferenceValues(t *testing.T) {
	for _, c := range []struct {
		name string
		h    []Segment
		want float64
	}{
		{"MNIST tutorial", []Segment{{256.0 / 60000, 1.1, 14063}}, 2.3818},
		{"cmd/train default", []Segment{{0.256, 4.3637, 120}}, 2.7535},
		{"two segments", []Segment{{0.01, 1, 500}, {0.01, 2, 500}}, 1.3987},
	} {
		s, err := PLD{}.Epsilon(c.h, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.Epsilon / c.want; r < 0.995 || r > 1.02 {
			t.Errorf("%s: ε = %.5f, dp_accounting %.4f (ratio %.5f)", c.name, s.Epsilon, c.want, r)
		}
		rdp, _ := RDP{}.Epsilon(c.h, 1e-5)
		if s.Epsilon > rdp.Epsilon {
			t.Errorf("%s: PLD ε = %v above RDP ε = %v", c.name, s.Epsilon, rdp.Epsilon)
		}
	}
}

// q = 1: T Gaussian steps at noise z are one Gaussian at z/√T (μ-GDP), whose
// exact ε(δ) is the closed form. The PLD bound lies above it and close.
func TestPLDGaussianClosedForm(t *testing.T) {
	if e := gaussianEpsilon(1, 1e-5); math.Abs(e-4.377) > 5e-4 {
		t.Fatalf("closed form ε = %v, issue 4.377", e)
	}
	for _, c := range []struct {
		z     float64
		steps int
		delta float64
	}{{1, 1, 1e-5}, {3, 10, 1e-5}, {10, 100, 1e-6}, {0.7, 1, 1e-3}, {50, 1000, 1e-5}} {
		exact := gaussianEpsilon(c.z/math.Sqrt(float64(c.steps)), c.delta)
		s, err := PLD{}.Epsilon([]Segment{{1, c.z, c.steps}}, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		if s.Epsilon < exact || s.Epsilon > exact*1.002+1e-4 {
			t.Errorf("z=%v T=%d δ=%v: PLD ε = %.6f, exact %.6f", c.z, c.steps, c.delta, s.Epsilon, exact)
		}
		d, err := PLD{}.Delta([]Segment{{1, c.z, c.steps}}, exact)
		if err != nil {
			t.Fatal(err)
		}
		if d.Delta < c.delta*(1-1e-9) || d.Delta > c.delta*1.05 {
			t.Errorf("z=%v T=%d: PLD δ(%v) = %v, exact %v", c.z, c.steps, exact, d.Delta, c.delta)
		}
	}
}

// PLD ≤ RDP on every plan; ε decreases in z and increases in steps.
func TestPLDBelowRDPAndMonotone(t *testing.T) {
	if testing.Short() {
		t.Skip("composes a few dozen plans")
	}
	for _, q := range []float64{0.001, 0.01, 0.1, 1} {
		for _, steps := range []int{1, 100, 3000} {
			prev := math.Inf(1)
			for _, z := range []float64{0.8, 1.5, 4} {
				h := []Segment{{q, z, steps}}
				p, err := PLD{}.Epsilon(h, 1e-5)
				if err != nil {
					t.Fatal(err)
				}
				r, _ := RDP{}.Epsilon(h, 1e-5)
				if p.Epsilon > r.Epsilon {
					t.Errorf("q=%v z=%v T=%d: PLD ε = %v > RDP ε = %v", q, z, steps, p.Epsilon, r.Epsilon)
				}
				if p.Epsilon > prev {
					t.Errorf("q=%v T=%d: ε rises from %v to %v as z grows to %v", q, steps, prev, p.Epsilon, z)
				}
				prev = p.Epsilon
			}
		}
	}
	prev := 0.0
	for _, steps := range []int{1, 10, 100, 1000, 10000} {
		p, _ := PLD{}.Epsilon([]Segment{{0.01, 1, steps}}, 1e-5)
		if p.Epsilon < prev {
			t.Errorf("ε falls from %v to %v at %d steps", prev, p.Epsilon, steps)
		}
		prev = p.Epsilon
	}
}

// Calibration: the returned z meets the target and z·(1 − 1e-4) does not.
func TestPLDCalibrate(t *testing.T) {
	for _, c := range []struct {
		q      float64
		steps  int
		target float64
	}{{256.0 / 60000, 14063, 3}, {0.256, 120, 3}, {0.01, 1000, 1}} {
		z, e, err := PLD{}.CalibrateNoise(c.q, c.steps, c.target, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := PLD{}.Epsilon([]Segment{{c.q, z, c.steps}}, 1e-5)
		if got.Epsilon != e || e > c.target {
			t.Errorf("%+v: z = %v gives ε = %v (reported %v), target %v", c, z, got.Epsilon, e, c.target)
		}
		below, _ := PLD{}.Epsilon([]Segment{{c.q, z * (1 - 1e-4), c.steps}}, 1e-5)
		if below.Epsilon <= c.target {
			t.Errorf("%+v: z·(1−1e-4) = %v still meets the target (ε = %v)", c, z*(1-1e-4), below.Epsilon)
		}
		zr, _, _ := CalibrateNoise(c.q, c.steps, c.target, 1e-5)
		if z >= zr {
			t.Errorf("%+v: PLD calibrates z = %v, RDP %v: PLD should need less noise", c, z, zr)
		}
	}
	// Through the option, CalibrateNoise is the PLD's.
	z1, _, _ := PLD{}.CalibrateNoise(0.256, 120, 3, 1e-5)
	z2, _, err := CalibrateNoise(0.256, 120, 3, 1e-5, WithAccountant(PLD{}))
	if err != nil || z1 != z2 {
		t.Errorf("CalibrateNoise(WithAccountant(PLD{})) = %v, %v; PLD.CalibrateNoise %v", z2, err, z1)
	}
}

// A ledger using the PLD answers from its history, and a ledger loaded from
// JSON is read by the loader's accountant.
func TestLedgerWithPLD(t *testing.T) {
	l := NewLedger(WithAccountant(PLD{}))
	for range 40 {
		if err := l.Record(0.256, 4.3637, 3); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := PLD{}.Epsilon([]Segment{{0.256, 4.3637, 120}}, 1e-5)
	if got != want {
		t.Errorf("ledger ε %+v, PLD %+v", got, want)
	}
	data, _ := l.MarshalJSON()
	rdp := NewLedger()
	if err := rdp.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	r, _ := rdp.Epsilon(1e-5)
	if math.Abs(r.Epsilon-2.9999) > 5e-4 || r.Order == 0 {
		t.Errorf("the same history under RDP: %+v, want ε ≈ 2.9999", r)
	}
	pld := NewLedger(WithAccountant(PLD{}))
	if err := pld.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if p, _ := pld.Epsilon(1e-5); p != want {
		t.Errorf("loaded under PLD: %+v, want %+v", p, want)
	}
	if a := pld.Clone().Accountant(); a.Name() != "pld" {
		t.Errorf("clone's accountant %q", a.Name())
	}
	if _, err := ParseAccountant("moments"); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("unknown accountant: %v", err)
	}
	if _, err := (PLD{Discretisation: -1}).Epsilon([]Segment{{0.1, 1, 1}}, 1e-5); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("bad discretisation: %v", err)
	}
}

// Snapping a varying-noise history to the grid over-states ε, by little.
func TestPLDGridSnapping(t *testing.T) {
	var h []Segment
	for i := range 200 {
		h = append(h, Segment{Q: 0.01, Z: 0.9 * math.Pow(20+float64(i), 0.25), Steps: 3})
	}
	exact, err := PLD{MergeTolerance: -1}.Epsilon(h, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	snapped, _ := PLD{}.Epsilon(h, 1e-5)
	if snapped.Epsilon < exact.Epsilon || snapped.Epsilon > exact.Epsilon*(1+DefaultPLDMergeTolerance) {
		t.Errorf("snapped ε = %v, exact %v", snapped.Epsilon, exact.Epsilon)
	}
	re, _ := RDP{}.Epsilon(h, 1e-5)
	rs, _ := RDP{GridRatio: 1e-3}.Epsilon(h, 1e-5)
	if rs.Epsilon < re.Epsilon || rs.Epsilon > re.Epsilon*1.002 {
		t.Errorf("RDP snapped ε = %v, exact %v", rs.Epsilon, re.Epsilon)
	}
	l := NewLedger()
	for _, s := range h {
		_ = l.Record(s.Q, s.Z, s.Steps)
	}
	if le, _ := l.Epsilon(1e-5); math.Abs(le.Epsilon-re.Epsilon) > 1e-12*re.Epsilon {
		t.Errorf("RDP accountant %v, ledger %v", re.Epsilon, le.Epsilon)
	}
}

// FuzzPLDHistory: random histories never give NaN or an ε below the exact
// ε of their q = 1 steps (a lower bound: those steps' output is a
// post-processing of the whole output), which the μ-GDP closed form gives.
func FuzzPLDHistory(f *testing.F) {
	f.Add(uint64(1), uint8(3))
	f.Add(uint64(7), uint8(1))
	f.Add(uint64(42), uint8(6))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		r := rand.New(rand.NewPCG(seed, 17))
		var h []Segment
		invVar := 0.0
		for range 1 + int(n)%6 {
			s := Segment{Q: []float64{1, 0.5, 0.01, 1e-4}[r.IntN(4)], Z: 0.3 + 10*r.Float64(), Steps: 1 + r.IntN(300)}
			if s.Q == 1 {
				invVar += float64(s.Steps) / (s.Z * s.Z)
			}
			h = append(h, s)
		}
		delta := []float64{1e-3, 1e-5, 1e-8}[r.IntN(3)]
		s, err := PLD{Discretisation: 1e-3}.Epsilon(h, delta)
		if err != nil || math.IsNaN(s.Epsilon) || s.Epsilon < 0 {
			t.Fatalf("%v: %+v, %v", h, s, err)
		}
		if invVar > 0 {
			if lb := gaussianEpsilon(1/math.Sqrt(invVar), delta); s.Epsilon < lb*(1-1e-9) {
				t.Fatalf("%v: ε = %v below the closed-form lower bound %v", h, s.Epsilon, lb)
			}
		}
		d, err := PLD{Discretisation: 1e-3}.Delta(h, math.Max(s.Epsilon, 1e-3))
		if err != nil || math.IsNaN(d.Delta) || d.Delta > delta*(1+1e-6) && s.Epsilon > 1e-3 {
			t.Fatalf("%v: δ(%v) = %+v, %v; want ≤ %v", h, s.Epsilon, d, err, delta)
		}
	})
}
