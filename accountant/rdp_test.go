package accountant

import (
	"errors"
	"math"
	"testing"
)

// TestSampledGaussianRDPReference compares with the defining integral
// A_α = E_{x~N(0,z²)}[(1 − q + q·e^{(2x−1)/(2z²)})^α] evaluated by mpmath
// quadrature at 40 digits (testdata/reference.py; for integer α it also
// agrees with the exact binomial sum to 25 digits). This checks the
// fractional-order erfc series and the integer binomial sum independently.
func TestSampledGaussianRDPReference(t *testing.T) {
	for _, c := range []struct{ q, z, order, want float64 }{
		{0.01, 0.8, 1.5, 0.00027331070004038855501},
		{0.01, 0.8, 2, 0.00037700224391936008537},
		{0.01, 0.8, 4.8, 0.0013121201187292022573},
		{0.01, 0.8, 10.5, 3.113239214690606098},
		{0.01, 0.8, 32, 20.246275937044550846},
		{256.0 / 60000, 1.1, 1.1, 0.000012779666371319916134},
		{256.0 / 60000, 1.1, 8, 0.000098341061779926028544},
		{256.0 / 60000, 1.1, 8.1, 0.000099659727619311208147},
		{256.0 / 60000, 1.1, 63, 20.488120577148467188},
		{0.5, 2, 1.25, 0.040866596458292608831},
		{0.5, 2, 2.5, 0.088629845524246102342},
		{0.5, 2, 3, 0.11002319335762329151},
		{1e-6, 10, 2.5, 1.2562708918550091288e-14},
		{1e-6, 10, 100, 5.0250885079529981497e-13},
		{1e-6, 10, 200.5, 1.0075312669034485142e-12},
		{0.05, 0.6, 1.7, 0.024861190746593689314},
		{0.05, 0.6, 12, 13.398595095517971151},
		// Orders near 1 with moderate z₀/z, where the series tail decays
		// only polynomially and is summed with the Euler transform.
		{0.1, 1.2, 1.1, 0.0050324885118615355673},
		{0.49, 5, 1.5, 0.0072765425853142130784},
		{0.01, 0.5, 1.1, 0.0015519923952293258247},
		{0.3, 0.5, 1.3, 0.54222398125515098576},
		{0.9, 1.2, 1.1, 0.31235816364967511238},
		{0.5, 1.2, 1.1, 0.10472489504922582963},
		{1e-5, 0.5, 1.1, 2.9261201998048956692e-9},
	} {
		got, err := SampledGaussianRDP(c.q, c.z, []float64{c.order})
		if err != nil {
			t.Fatal(err)
		}
		if !closeRel(got[0], c.want, 1e-12) {
			t.Errorf("RDP(q=%v, z=%v, α=%v) = %.15g, want %.15g (rel err %.2g)",
				c.q, c.z, c.order, got[0], c.want, math.Abs(got[0]-c.want)/c.want)
		}
	}
}

// TestSampledGaussianRDPFullBatch checks the closed form α/(2z²) at q = 1.
func TestSampledGaussianRDPFullBatch(t *testing.T) {
	orders := []float64{1.5, 2, 7.3, 64, 1000}
	got, err := SampledGaussianRDP(1, 0.7, orders)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range orders {
		if want := a / (2 * 0.49); !closeRel(got[i], want, 1e-15) {
			t.Errorf("α = %v: %v, want %v", a, got[i], want)
		}
	}
}

// TestSampledGaussianRDPSmallQ checks the second-order expansion in q,
// A_α = 1 + α(α−1)/2·q²·(e^{1/z²} − 1) + O(q³), so RDP ≈ α q² (e^{1/z²} − 1)/2,
// at q = 1e-9 where the O(q³) remainder is negligible.
func TestSampledGaussianRDPSmallQ(t *testing.T) {
	const q = 1e-9
	for _, z := range []float64{1, 3} {
		orders := []float64{1.3, 2, 4.5, 17, 40}
		got, err := SampledGaussianRDP(q, z, orders)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range orders {
			want := a * q * q * math.Expm1(1/(z*z)) / 2
			if !closeRel(got[i], want, 1e-5) {
				t.Errorf("z = %v, α = %v: %.10g, want %.10g", z, a, got[i], want)
			}
		}
	}
}

// TestSampledGaussianRDPIntegerFractionalAgree evaluates the fractional
// series a hair away from integer orders, where the binomial sum applies:
// the two independent formulas must meet.
func TestSampledGaussianRDPIntegerFractionalAgree(t *testing.T) {
	for _, c := range []struct{ q, z float64 }{{256.0 / 60000, 1.1}, {0.01, 0.8}, {0.2, 3}, {1e-4, 0.5}} {
		for _, a := range []float64{2, 5, 12, 40} {
			got, err := SampledGaussianRDP(c.q, c.z, []float64{a, a * (1 + 1e-10)})
			if err != nil {
				t.Fatal(err)
			}
			if !closeRel(got[1], got[0], 1e-7) {
				t.Errorf("q=%v z=%v: integer order %v gives %.12g, fractional %v gives %.12g", c.q, c.z, a, got[0], a*(1+1e-10), got[1])
			}
		}
	}
}

// TestSampledGaussianRDPMonotone checks that Rényi divergence grows with the
// order, with q, and falls with z.
func TestSampledGaussianRDPMonotone(t *testing.T) {
	orders := OrdersUpTo(256)
	prevQ := make([]float64, len(orders))
	for _, q := range []float64{1e-5, 1e-3, 0.01, 0.1, 0.5, 0.9, 1} {
		rdp, err := SampledGaussianRDP(q, 1.2, orders)
		if err != nil {
			t.Fatal(err)
		}
		for i := range orders {
			if i > 0 && rdp[i] < rdp[i-1]*(1-1e-9) {
				t.Errorf("q=%v: RDP falls from order %v (%g) to %v (%g)", q, orders[i-1], rdp[i-1], orders[i], rdp[i])
			}
			if rdp[i] < prevQ[i]*(1-1e-9) {
				t.Errorf("order %v: RDP falls as q grows to %v", orders[i], q)
			}
			if math.IsNaN(rdp[i]) || rdp[i] < 0 {
				t.Errorf("q=%v order %v: RDP %v", q, orders[i], rdp[i])
			}
		}
		copy(prevQ, rdp)
	}
	prevZ, _ := SampledGaussianRDP(0.01, 0.3, orders)
	for _, z := range []float64{0.5, 1, 2, 8, 50} {
		rdp, _ := SampledGaussianRDP(0.01, z, orders)
		for i := range orders {
			if rdp[i] > prevZ[i]*(1+1e-9) {
				t.Errorf("order %v: RDP rises as z grows to %v", orders[i], z)
			}
		}
		prevZ = rdp
	}
}

func TestSampledGaussianRDPInvalid(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		q, z   float64
		orders []float64
	}{
		{0, 1, []float64{2}}, {-0.1, 1, []float64{2}}, {1.01, 1, []float64{2}}, {nan, 1, []float64{2}},
		{0.1, 0, []float64{2}}, {0.1, -1, []float64{2}}, {0.1, nan, []float64{2}}, {0.1, math.Inf(1), []float64{2}},
		{0.1, 1, []float64{1}}, {0.1, 1, []float64{0.5}}, {0.1, 1, []float64{nan}}, {0.1, 1, []float64{math.Inf(1)}},
	} {
		if _, err := SampledGaussianRDP(c.q, c.z, c.orders); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("SampledGaussianRDP(%v, %v, %v): err = %v, want ErrInvalidParameter", c.q, c.z, c.orders, err)
		}
	}
}

// TestLogAFracAcceleration compares the Euler-accelerated tail with plain
// summation of the series until its terms are negligible.
func TestLogAFracAcceleration(t *testing.T) {
	if testing.Short() {
		t.Skip("brute-force summation takes a few seconds")
	}
	for _, q := range []float64{1e-7, 0.02, 0.45, 0.55, 0.95} {
		for _, z := range []float64{0.4, 1.5, 20} {
			for _, a := range []float64{1.05, 2.5, 30.5} {
				fast := newFracSeries(q, z).logA(a, true)
				slow := newFracSeries(q, z).logA(a, false)
				if !closeRel(fast, slow, 1e-11) || math.IsNaN(fast) {
					t.Errorf("q=%v z=%v α=%v: accelerated %.15g, plain %.15g", q, z, a, fast, slow)
				}
			}
		}
	}
}

// TestSampledGaussianRDPSweep checks finiteness, non-negativity and growth
// in the order over a wide grid, extremes included (z below 1e-100 gives
// +Inf, z above 1e100 the bound α/(2z²)).
func TestSampledGaussianRDPSweep(t *testing.T) {
	orders := append(OrdersUpTo(1024), 1.0001, 1.01, 70.5, 300.25, 1023.5)
	orders, _ = checkOrders(orders)
	for _, q := range []float64{1e-300, 1e-12, 1e-9, 1e-6, 1e-4, 0.003, 0.05, 0.3, 0.4999, 0.5, 0.5001, 0.8, 0.999, 1 - 1e-16, 1} {
		for _, z := range []float64{1e-300, 1e-154, 1e-100, 1e-20, 0.05, 0.3, 0.8, 2, 10, 100, 1e4, 1e20, 1e99, 1e101, 1e300} {
			rdp, err := SampledGaussianRDP(q, z, orders)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rdp {
				if math.IsNaN(r) || math.IsInf(r, -1) || r < 0 || (math.IsInf(r, 1) && z > 1e-20) {
					t.Fatalf("q=%v z=%v order %v: RDP = %v", q, z, orders[i], r)
				}
				// For q ≥ 1/2 the series sums A_α itself (not A_α − 1), so
				// the RDP carries an absolute error of order 1e-15·α/(α − 1).
				if i == 0 {
					continue
				}
				if a := orders[i-1]; r < rdp[i-1]*(1-1e-8)-1e-15*a/(a-1) {
					t.Errorf("q=%v z=%v: RDP falls from order %v (%.12g) to %v (%.12g)", q, z, orders[i-1], rdp[i-1], orders[i], r)
				}
			}
		}
	}
}
