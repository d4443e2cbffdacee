package accountant

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func epsilonOf(t *testing.T, q, z float64, steps int, delta float64, opts ...Option) Spent {
	t.Helper()
	l := NewLedger(opts...)
	if err := l.Record(q, z, steps); err != nil {
		t.Fatal(err)
	}
	s, err := l.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEpsilonTFPrivacyREADME reproduces the TF Privacy README (MNIST
// tutorial, classic conversion, 151 default orders) to its two decimals, and
// the seeds digest §0.3 table (computed with a port of TF Privacy) to three.
func TestEpsilonTFPrivacyREADME(t *testing.T) {
	for _, c := range []struct {
		q, z   float64
		steps  int
		want   float64
		digits float64 // half a unit in the last printed digit
	}{
		{256.0 / 60000, 1.1, 14040, 3.01, 0.005},
		{256.0 / 60000, 1.3, 3510, 1.19, 0.005},
		{256.0 / 60000, 0.7, 10530, 7.10, 0.005},
		{256.0 / 60000, 1.1, 14040, 3.006, 0.0005},
		{256.0 / 60000, 1.3, 3510, 1.191, 0.0005},
		{256.0 / 60000, 0.7, 10530, 7.096, 0.0005},
		{256.0 / 60000, 2.0, 14040, 1.345, 0.0005},
		{256.0 / 60000, 5.0, 14040, 0.497, 0.0005},
		{256.0 / 60000, 8.0, 14040, 0.313, 0.0005},
		{256.0 / 60000, 10.0, 14040, 0.267, 0.0005},
		{256.0 / 50000, 2.0, 11700, 1.478, 0.0005},
	} {
		s := epsilonOf(t, c.q, c.z, c.steps, 1e-5, WithConversion(Classic))
		if math.Abs(s.Epsilon-c.want) > c.digits {
			t.Errorf("q=%.6g z=%v steps=%d: ε = %.5f, want %v", c.q, c.z, c.steps, s.Epsilon, c.want)
		}
	}
}

// TestEpsilonOpacus reproduces Opacus's RDPAccountant (Balle et al. 2020
// conversion, its 151 default orders) to 1e-6 relative, with its optimal
// order.
func TestEpsilonOpacus(t *testing.T) {
	for _, c := range []struct {
		q, z      float64
		steps     int
		delta     float64
		want, ord float64
	}{
		{256.0 / 60000, 1.1, 14000, 1e-5, 2.5903769658, 8.1},
		{0.01, 0.8, 1000, 1e-5, 3.6954288325, 4.8},
		{1, 5, 100, 1e-6, 11.6886267992, 3.5},
	} {
		s := epsilonOf(t, c.q, c.z, c.steps, c.delta)
		if !closeRel(s.Epsilon, c.want, 1e-6) || s.Order != c.ord || s.AtEdge {
			t.Errorf("q=%.6g z=%v steps=%d δ=%v: %+v, want ε = %v at order %v", c.q, c.z, c.steps, c.delta, s, c.want, c.ord)
		}
		if s.Delta != c.delta {
			t.Errorf("Spent.Delta = %v, want %v", s.Delta, c.delta)
		}
	}
}

// TestEpsilonFullBatchClosedForm checks the Balle and classic conversions
// for q = 1 against the closed form minimised by hand: RDP(α) = Tα/(2z²), so
// the classic ε(α) = Tα/(2z²) + log(1/δ)/(α − 1), minimised over real α at
// α* = 1 + √(2z² log(1/δ)/T) with ε* = T/(2z²) + √(2T log(1/δ))/z; on a
// dense order grid the ledger comes within 1e-6 of it, from above.
func TestEpsilonFullBatchClosedForm(t *testing.T) {
	var orders []float64
	for a := 1.001; a < 40; a += 0.001 {
		orders = append(orders, a)
	}
	const z, steps, delta = 4.0, 50, 1e-5
	s := epsilonOf(t, 1, z, steps, delta, WithOrders(orders), WithConversion(Classic))
	L := math.Log(1 / delta)
	want := steps/(2*z*z) + math.Sqrt(2*steps*L)/z
	if s.Epsilon < want-1e-12 || s.Epsilon > want+1e-6 {
		t.Errorf("classic ε = %.10f, closed form %.10f", s.Epsilon, want)
	}
	if wantOrder := 1 + math.Sqrt(2*z*z*L/steps); math.Abs(s.Order-wantOrder) > 0.001 {
		t.Errorf("order %v, want %v", s.Order, wantOrder)
	}
	// Balle at a single order is the classic value minus
	// (log α)/(α−1) − log((α−1)/α); check it at α = 3.
	b := epsilonOf(t, 1, z, steps, delta, WithOrders([]float64{3}))
	c := epsilonOf(t, 1, z, steps, delta, WithOrders([]float64{3}), WithConversion(Classic))
	if want := c.Epsilon - math.Log(3)/2 + math.Log(2.0/3); !closeRel(b.Epsilon, want, 1e-14) {
		t.Errorf("Balle at α=3: %v, want %v", b.Epsilon, want)
	}
}

// TestEpsilonProperties: ε falls as z or δ grows, rises with q and steps,
// and Balle never exceeds classic.
func TestEpsilonProperties(t *testing.T) {
	base := func(q, z float64, steps int, delta float64) float64 {
		return epsilonOf(t, q, z, steps, delta).Epsilon
	}
	prev := math.Inf(1)
	for _, z := range []float64{0.5, 0.7, 1, 1.5, 3, 10} {
		e := base(0.01, z, 1000, 1e-5)
		if !(e < prev) {
			t.Errorf("ε does not fall with z: z=%v ε=%v, previous %v", z, e, prev)
		}
		prev = e
	}
	prev = math.Inf(1)
	for _, d := range []float64{1e-10, 1e-7, 1e-5, 1e-3, 0.1} {
		e := base(0.01, 1, 1000, d)
		if !(e < prev) {
			t.Errorf("ε does not fall with δ: δ=%v ε=%v, previous %v", d, e, prev)
		}
		prev = e
	}
	prev = 0
	for _, q := range []float64{1e-4, 1e-3, 0.01, 0.1, 0.5, 1} {
		e := base(q, 1, 1000, 1e-5)
		if !(e > prev) {
			t.Errorf("ε does not rise with q: q=%v ε=%v, previous %v", q, e, prev)
		}
		prev = e
	}
	prev = 0
	for _, n := range []int{1, 10, 100, 1000, 10000} {
		e := base(0.01, 1, n, 1e-5)
		if !(e > prev) {
			t.Errorf("ε does not rise with steps: %d steps ε=%v, previous %v", n, e, prev)
		}
		prev = e
	}
	for _, z := range []float64{0.6, 1.1, 4} {
		b := base(0.02, z, 500, 1e-5)
		c := epsilonOf(t, 0.02, z, 500, 1e-5, WithConversion(Classic)).Epsilon
		if b > c {
			t.Errorf("z=%v: Balle ε %v > classic %v", z, b, c)
		}
	}
}

// TestRecordAdditive: Record(q,z,a) then Record(q,z,b) equals
// Record(q,z,a+b) at every order, and heterogeneous segments add their RDP.
func TestRecordAdditive(t *testing.T) {
	orders := OrdersUpTo(256)
	for _, c := range []struct {
		q, z float64
		a, b int
	}{{256.0 / 60000, 1.1, 7000, 7040}, {0.01, 0.8, 1, 999}, {1, 5, 37, 63}, {1e-6, 30, 123456, 1}} {
		split := NewLedger(WithOrders(orders))
		whole := NewLedger(WithOrders(orders))
		if err := errors.Join(split.Record(c.q, c.z, c.a), split.Record(c.q, c.z, c.b), whole.Record(c.q, c.z, c.a+c.b)); err != nil {
			t.Fatal(err)
		}
		rs, rw := split.RDP(), whole.RDP()
		for i := range rs {
			if !closeRel(rs[i], rw[i], 1e-12) {
				t.Errorf("%+v order %v: split %v, whole %v", c, orders[i], rs[i], rw[i])
			}
		}
		if split.Steps() != c.a+c.b {
			t.Errorf("Steps = %d, want %d", split.Steps(), c.a+c.b)
		}
		if h := split.History(); len(h) != 1 || h[0] != (Segment{c.q, c.z, c.a + c.b}) {
			t.Errorf("History = %+v, want one merged segment", h)
		}
	}
	// Heterogeneous: the total is the step-weighted sum of per-step RDPs.
	l := NewLedger(WithOrders(orders))
	segs := []Segment{{0.01, 1.1, 300}, {0.02, 0.9, 50}, {0.01, 1.1, 20}, {1, 12, 3}}
	want := make([]float64, len(orders))
	for _, s := range segs {
		if err := l.Record(s.Q, s.Z, s.Steps); err != nil {
			t.Fatal(err)
		}
		r, _ := SampledGaussianRDP(s.Q, s.Z, orders)
		for i := range want {
			want[i] += float64(s.Steps) * r[i]
		}
	}
	for i, r := range l.RDP() {
		if !closeRel(r, want[i], 1e-12) {
			t.Errorf("order %v: ledger %v, sum of segments %v", orders[i], r, want[i])
		}
	}
	if h := l.History(); !slices.Equal(h, segs) {
		t.Errorf("History = %+v, want %+v", h, segs)
	}
}

// TestDeltaInvertsEpsilon: δ(ε(δ₀)) = δ₀, because both minimise over the
// same orders of a conversion that is monotone in δ.
func TestDeltaInvertsEpsilon(t *testing.T) {
	for _, conv := range []Conversion{Balle, Classic} {
		l := NewLedger(WithConversion(conv))
		if err := errors.Join(l.Record(256.0/60000, 1.1, 10000), l.Record(0.01, 2, 500)); err != nil {
			t.Fatal(err)
		}
		for _, d0 := range []float64{1e-9, 1e-5, 1e-3} {
			s, err := l.Epsilon(d0)
			if err != nil {
				t.Fatal(err)
			}
			back, err := l.Delta(s.Epsilon)
			if err != nil {
				t.Fatal(err)
			}
			if !closeRel(back.Delta, d0, 1e-9) || back.Order != s.Order {
				t.Errorf("%v: δ(ε(%v)) = %+v, ε spent %+v", conv, d0, back, s)
			}
		}
		// Larger ε, smaller δ.
		a, _ := l.Delta(1)
		b, _ := l.Delta(2)
		if !(b.Delta < a.Delta) {
			t.Errorf("%v: δ(2) = %v not below δ(1) = %v", conv, b.Delta, a.Delta)
		}
	}
}

func TestLedgerEmptyAndZeroValue(t *testing.T) {
	var l Ledger
	s, err := l.Epsilon(1e-5)
	if err != nil || s.Epsilon != 0 || l.Steps() != 0 {
		t.Errorf("empty ledger: %+v, %v", s, err)
	}
	d, err := l.Delta(1)
	if err != nil || d.Delta != 0 {
		t.Errorf("empty ledger Delta: %+v, %v", d, err)
	}
	// The zero Ledger uses the defaults: same ε as NewLedger().
	if err := l.Record(256.0/60000, 1.1, 14000); err != nil {
		t.Fatal(err)
	}
	s, _ = l.Epsilon(1e-5)
	if !closeRel(s.Epsilon, 2.5903769658, 1e-6) || len(l.Orders()) != 151 || l.Conversion() != Balle {
		t.Errorf("zero Ledger: %+v with %d orders, %v", s, len(l.Orders()), l.Conversion())
	}
}

func TestEpsilonAtEdge(t *testing.T) {
	// Tiny ε needs large orders: the default list ends at 63.
	s := epsilonOf(t, 1000.0/347786, 14.23, 17389, 1e-3)
	if !s.AtEdge || s.Order != 63 {
		t.Errorf("large noise: %+v, want optimum at the last order 63", s)
	}
	wide := epsilonOf(t, 1000.0/347786, 14.23, 17389, 1e-3, WithOrders(OrdersUpTo(1024)))
	if wide.AtEdge || !(wide.Epsilon < s.Epsilon) {
		t.Errorf("with orders to 1024: %+v, want an interior optimum below %v", wide, s.Epsilon)
	}
	// Huge ε needs orders near 1.
	s = epsilonOf(t, 1, 0.3, 1000, 1e-5)
	if !s.AtEdge || s.Order != 1.1 {
		t.Errorf("tiny noise: %+v, want optimum at the first order 1.1", s)
	}
	if s := epsilonOf(t, 0.01, 1, 100, 1e-5); s.AtEdge {
		t.Errorf("ordinary plan reported at edge: %+v", s)
	}
}

func TestLedgerInvalid(t *testing.T) {
	l := NewLedger()
	nan := math.NaN()
	for _, c := range []struct {
		q, z  float64
		steps int
	}{
		{0, 1, 1}, {1.5, 1, 1}, {-1, 1, 1}, {nan, 1, 1}, {0.1, 0, 1}, {0.1, -2, 1}, {0.1, nan, 1},
		{0.1, math.Inf(1), 1}, {0.1, 1, 0}, {0.1, 1, -5},
	} {
		if err := l.Record(c.q, c.z, c.steps); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("Record(%v, %v, %v) = %v, want ErrInvalidParameter", c.q, c.z, c.steps, err)
		}
	}
	if l.Steps() != 0 || len(l.History()) != 0 {
		t.Errorf("failed Records changed the ledger")
	}
	for _, d := range []float64{0, 1, -1e-5, 2, nan} {
		if _, err := l.Epsilon(d); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("Epsilon(%v): %v, want ErrInvalidParameter", d, err)
		}
	}
	for _, e := range []float64{0, -1, nan, math.Inf(1)} {
		if _, err := l.Delta(e); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("Delta(%v): %v, want ErrInvalidParameter", e, err)
		}
	}
	for _, orders := range [][]float64{{}, {1}, {0.5, 2}, {2, nan}, {2, math.Inf(1)}, {2, MaxOrder + 1}} {
		bad := NewLedger(WithOrders(orders))
		if err := bad.Record(0.1, 1, 1); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("WithOrders(%v): Record = %v, want ErrInvalidParameter", orders, err)
		}
		if _, err := bad.Epsilon(1e-5); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("WithOrders(%v): Epsilon = %v, want ErrInvalidParameter", orders, err)
		}
	}
	if err := NewLedger(WithConversion(Conversion(7))).Record(0.1, 1, 1); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("unknown conversion: %v", err)
	}
}

func TestOrders(t *testing.T) {
	d := DefaultOrders()
	if len(d) != 151 || d[0] != 1.1 || d[98] != 10.9 || d[99] != 12 || d[150] != 63 {
		t.Errorf("DefaultOrders: %d orders, %v … %v", len(d), d[:3], d[len(d)-3:])
	}
	if !slices.IsSorted(d) {
		t.Error("DefaultOrders not sorted")
	}
	e := OrdersUpTo(1024)
	if len(e) != 151+961 || e[len(e)-1] != 1024 || !slices.Equal(e[:151], d) {
		t.Errorf("OrdersUpTo(1024): %d orders ending %v", len(e), e[len(e)-1])
	}
	if !slices.Equal(OrdersUpTo(10), d) {
		t.Error("OrdersUpTo(10) should be the defaults")
	}
	// WithOrders sorts and removes duplicates.
	l := NewLedger(WithOrders([]float64{5, 2, 2, 3.5}))
	if got := l.Orders(); !slices.Equal(got, []float64{2, 3.5, 5}) {
		t.Errorf("Orders = %v", got)
	}
}

func TestParseConversion(t *testing.T) {
	for _, c := range []Conversion{Balle, Classic} {
		got, err := ParseConversion(c.String())
		if err != nil || got != c {
			t.Errorf("ParseConversion(%q) = %v, %v", c.String(), got, err)
		}
	}
	if _, err := ParseConversion("renyi"); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("ParseConversion(renyi): %v", err)
	}
	// The names are the -conversion flag's values; a value outside the enum names itself.
	for c, want := range map[Conversion]string{Balle: "balle", Classic: "classic", 2: "Conversion(2)", -1: "Conversion(-1)"} {
		if got := c.String(); got != want {
			t.Errorf("Conversion(%d).String() = %q, want %q", int(c), got, want)
		}
	}
}

// The ledger answers through its accountant: what it reports after a mixed
// run of Record calls (repeated, alternating and merged (q, z)) is what the
// RDP accountant computes from the ledger's history at once, summed in
// another order, and the ledger of a PLD accountant is that accountant's
// answer.
func TestLedgerAnswersAsItsAccountant(t *testing.T) {
	calls := []Segment{{0.01, 1.1, 1}, {0.01, 1.1, 1}, {0.02, 0.9, 3}, {0.01, 1.1, 2}, {0.02, 0.9, 1}, {0.5, 4, 7}}
	for _, acct := range []Accountant{RDP{}, RDP{Orders: []float64{1.5, 2, 8, 32}, Conversion: Classic}, PLD{}} {
		l := NewLedger(WithAccountant(acct))
		if s, err := l.Epsilon(1e-5); err != nil || s.Epsilon != 0 {
			t.Errorf("%s: empty ledger spends %+v, %v; want ε = 0", acct.Name(), s, err)
		}
		for _, c := range calls {
			if err := l.Record(c.Q, c.Z, c.Steps); err != nil {
				t.Fatal(err)
			}
		}
		got, err := l.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		want, err := acct.Epsilon(l.History(), 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Epsilon-want.Epsilon) > 1e-12*want.Epsilon || got.Order != want.Order {
			t.Errorf("%s: ledger ε %+v, accountant on its history %+v", acct.Name(), got, want)
		}
		gotD, err := l.Delta(got.Epsilon)
		if err != nil {
			t.Fatal(err)
		}
		wantD, err := acct.Delta(l.History(), got.Epsilon)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(gotD.Delta-wantD.Delta) > 1e-12*wantD.Delta {
			t.Errorf("%s: ledger δ %+v, accountant on its history %+v", acct.Name(), gotD, wantD)
		}
	}
}
