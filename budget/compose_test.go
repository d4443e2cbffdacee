package budget

import (
	"math"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
)

func gauss(z float64, steps int) Spend {
	return SegmentSpend("rdp", []accountant.Segment{{Q: 1, Z: z, Steps: steps}})
}

// Four runs of the Gaussian mechanism (q = 1) compose to one Gaussian with σ = z/√T:
// the store's ε lies between the exact ε (Balle and Wang's closed form) and the RDP
// bound (Mironov's closed form, Balle et al.'s conversion), close to the exact one
// (PLD), and says so.
func TestComposeGaussianClosedForm(t *testing.T) {
	const z, delta = 6.0, 1e-5
	spends := []Spend{gauss(z, 10), gauss(z, 20), gauss(z, 5), SegmentSpend("pld", []accountant.Segment{{Q: 1, Z: z, Steps: 7}})}
	c, err := Compose(spends, delta)
	if err != nil {
		t.Fatal(err)
	}
	exact := gaussianEpsilon(z/math.Sqrt(42), delta)
	rdp := gaussianRDPEpsilon(42, z, delta, nil)
	t.Logf("ε = %.6f (%s); exact %.6f, RDP %.6f", c.Epsilon, c.Method, exact, rdp)
	if c.Epsilon < exact-1e-9 || c.Epsilon > rdp+1e-9 {
		t.Fatalf("ε = %v outside [exact %v, RDP %v]", c.Epsilon, exact, rdp)
	}
	if c.Method != "pld" || (c.Epsilon-exact)/exact > 2e-3 {
		t.Errorf("ε = %v by %s; want the PLD bound within 0.2%% of the exact %v", c.Epsilon, c.Method, exact)
	}
	if c.Delta != delta {
		t.Errorf("δ = %v, want %v", c.Delta, delta)
	}
}

// With an RDP curve in the mix only RDP composes: the result is the closed-form RDP ε
// of all steps plus the curve, exactly.
func TestComposeCurveIsRDP(t *testing.T) {
	const z, delta = 0.9, 1e-6
	orders := testOrders()
	vals := make([]float64, len(orders))
	for i, a := range orders {
		vals[i] = 3 * a / (2 * z * z) // three more Gaussian steps, as a curve
	}
	c, err := Compose([]Spend{gauss(z, 12), {RDP: &Curve{Orders: orders, Values: vals}}}, delta)
	if err != nil {
		t.Fatal(err)
	}
	want := gaussianRDPEpsilon(15, z, delta, nil)
	if c.Method != "rdp" || math.Abs(c.Epsilon-want) > 1e-9*want {
		t.Errorf("ε = %v by %s, want %v by rdp", c.Epsilon, c.Method, want)
	}
	// A curve on other orders composes at the shared ones only.
	odd := &Curve{Orders: []float64{2, 4, 8, 300}, Values: []float64{1, 2, 4, 150}}
	c, err = Compose([]Spend{gauss(z, 12), {RDP: odd}}, delta)
	if err != nil {
		t.Fatal(err)
	}
	best := math.Inf(1)
	for i, a := range []float64{2, 4, 8, 300} {
		r := 12*a/(2*z*z) + odd.Values[i]
		best = min(best, r+math.Log((a-1)/a)-(math.Log(delta)+math.Log(a))/(a-1))
	}
	if math.Abs(c.Epsilon-best) > 1e-9*best {
		t.Errorf("ε = %v on the shared orders, want %v", c.Epsilon, best)
	}
	if _, err := Compose([]Spend{{RDP: &Curve{Orders: []float64{3}, Values: []float64{1}}}, {RDP: odd}}, delta); err == nil {
		t.Error("curves without a shared order composed")
	}
}

// (ε, δ) runs add by basic composition: the rest converts at δ − Σ δ_i.
func TestComposeApprox(t *testing.T) {
	const z = 1.1
	c, err := Compose([]Spend{gauss(z, 8), {Approx: &Approx{Epsilon: 0.5, Delta: 2e-6}}, {Approx: &Approx{Epsilon: 0.25}}}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	exact := gaussianEpsilon(z/math.Sqrt(8), 1e-5-2e-6)
	rdp := gaussianRDPEpsilon(8, z, 1e-5-2e-6, nil)
	if c.Epsilon < exact+0.75-1e-9 || c.Epsilon > rdp+0.75+1e-9 || !strings.Contains(c.Method, "basic composition of 2") {
		t.Errorf("ε = %v (%s), want in [%v, %v] with basic composition", c.Epsilon, c.Method, exact+0.75, rdp+0.75)
	}
	if _, err := Compose([]Spend{gauss(z, 8), {Approx: &Approx{Epsilon: 0.5, Delta: 1e-5}}}, 1e-5); err == nil {
		t.Error("δ used up by the (ε, δ) runs accepted")
	}
	c, err = Compose([]Spend{{Approx: &Approx{Epsilon: 0.5, Delta: 1e-6}}, {Approx: &Approx{Epsilon: 2}}}, 1e-6)
	if err != nil || c.Epsilon != 2.5 {
		t.Errorf("pure basic composition: %v, %v; want ε = 2.5", c, err)
	}
	c, err = Compose([]Spend{gauss(z, 8), {Unbounded: true}}, 1e-5)
	if err != nil || !math.IsInf(c.Epsilon, 1) || c.Method != "unbounded" {
		t.Errorf("with an unbounded run: %v, %v; want +Inf", c, err)
	}
	c, err = Compose(nil, 1e-5)
	if err != nil || c.Epsilon != 0 {
		t.Errorf("nothing spent: %v, %v", c, err)
	}
}

func TestSpendValidate(t *testing.T) {
	bad := []Spend{
		{},
		{Accountant: "rdp", Unbounded: true},
		{Accountant: "moments"},
		{Segments: []accountant.Segment{{Q: 1, Z: 1, Steps: 1}}},
		SegmentSpend("rdp", []accountant.Segment{{Q: 0, Z: 1, Steps: 1}}),
		SegmentSpend("rdp", []accountant.Segment{{Q: 0.5, Z: 0, Steps: 1}}),
		SegmentSpend("rdp", []accountant.Segment{{Q: 0.5, Z: math.Inf(1), Steps: 1}}),
		SegmentSpend("rdp", []accountant.Segment{{Q: 0.5, Z: 1, Steps: 0}}),
		{RDP: &Curve{Orders: []float64{2, 2}, Values: []float64{1, 1}}},
		{RDP: &Curve{Orders: []float64{1}, Values: []float64{1}}},
		{RDP: &Curve{Orders: []float64{2}, Values: []float64{-1}}},
		{RDP: &Curve{Orders: []float64{2}, Values: []float64{math.NaN()}}},
		{Approx: &Approx{Epsilon: -1}},
		{Approx: &Approx{Epsilon: 1, Delta: 1}},
	}
	for i, s := range bad {
		if s.Validate() == nil {
			t.Errorf("spend %d (%+v) validated", i, s)
		}
	}
	if err := SegmentSpend("pld", nil).Validate(); err != nil {
		t.Errorf("a run of no steps: %v", err)
	}
}

// The PLD bound is skipped where it is costly: more than 8 distinct (q, z), or ε above 20
// by RDP; the RDP bound is then reported alone, as the closed form gives it.
func TestComposePLDGuard(t *testing.T) {
	var many []Spend
	for i := range 9 {
		many = append(many, gauss(6+float64(i)/100, 2))
	}
	c, err := Compose(many, 1e-5)
	if err != nil || c.Method != "rdp" {
		t.Errorf("9 mechanisms: %+v, %v; want the RDP bound", c, err)
	}
	c, err = Compose([]Spend{gauss(0.5, 10)}, 1e-5)
	if want := gaussianRDPEpsilon(10, 0.5, 1e-5, nil); err != nil || c.Method != "rdp" || math.Abs(c.Epsilon-want) > 1e-9*want {
		t.Errorf("ε ≈ %v: %+v, %v; want the RDP bound %v", want, c, err, want)
	}
}
