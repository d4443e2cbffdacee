package erm

import (
	"math"
	"testing"

	"github.com/privtrain/privtrain/accountant"
)

// TestZCDPCalibrationRoundTrip checks digest §4.6: σ = G√(2T/ρ*)/n with
// ρ* = (√(log(1/δ) + ε) − √log(1/δ))², recomputed here, and that the ε
// back-computed from σ by ρ = 2TG²/(n²σ²), ε = ρ + 2√(ρ log(1/δ)) is the
// target. For small ε, σ²n²ε²/(G²T log(1/δ)) tends to 8 (the paper's c).
func TestZCDPCalibrationRoundTrip(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		T, n       int
		G          float64
	}{
		{1, 1e-3, 1000, 100000, 1},
		{0.2, 1e-5, 1500, 200000, 0.7},
		{4, 1e-2, 10, 569, 2},
	} {
		sigma, achieved, err := zcdpNoise(c.eps, c.delta, c.T, c.n, c.G)
		if err != nil {
			t.Fatal(err)
		}
		l := math.Log(1 / c.delta)
		rhoStar := math.Pow(math.Sqrt(l+c.eps)-math.Sqrt(l), 2)
		want := c.G * math.Sqrt(2*float64(c.T)/rhoStar) / float64(c.n)
		if math.Abs(sigma-want) > 1e-6*want {
			t.Errorf("%+v: σ = %v, want %v", c, sigma, want)
		}
		rho := 2 * float64(c.T) * c.G * c.G / (float64(c.n) * float64(c.n) * sigma * sigma)
		if back := rho + 2*math.Sqrt(rho*l); math.Abs(back-c.eps) > 1e-9 || math.Abs(achieved-c.eps) > 1e-9 {
			t.Errorf("%+v: back-computed ε = %v (reported %v)", c, back, achieved)
		}
	}
	sigma, _, _ := zcdpNoise(1e-4, 1e-5, 100, 1000, 1)
	if c := sigma * sigma * 1e6 * 1e-8 / (100 * math.Log(1e5)); math.Abs(c-8) > 0.01 {
		t.Errorf("small-ε constant c = %v, want 8", c)
	}
}

// TestSVRGNoise checks the DP-SVRG calibration: at the returned σ the best
// split meets ε, 3% less noise misses it for every split on a fine grid, and
// σ is at least what each part alone would need with all the variance.
func TestSVRGNoise(t *testing.T) {
	const eps, delta, steps, n, G = 1.0, 1e-3, 2000, 5000, 1.0
	opts := []accountant.Option{accountant.WithOrders(accountant.OrdersUpTo(256))}
	sigma, achieved, split, err := svrgNoise(eps, delta, steps, n, 1, G, opts)
	if err != nil {
		t.Fatal(err)
	}
	if achieved > eps {
		t.Errorf("achieved ε %v > %v", achieved, eps)
	}
	epsAt := func(sigma, f float64) float64 {
		l := accountant.NewLedger(opts...)
		if err := l.Record(1.0/n, math.Sqrt(f)*sigma/(4*G), steps); err != nil {
			t.Fatal(err)
		}
		if err := l.Record(1, math.Sqrt(1-f)*sigma/(2*G/n), steps); err != nil {
			t.Fatal(err)
		}
		s, err := l.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		return s.Epsilon
	}
	if e := epsAt(sigma, split); e > eps*(1+1e-9) {
		t.Errorf("ε at σ = %v, split %v: %v", sigma, split, e)
	}
	for f := 0.005; f < 1; f += 0.005 {
		if e := epsAt(0.97*sigma, f); e <= eps {
			t.Errorf("0.97σ with split %v already meets ε (%v): calibration too loose", f, e)
			break
		}
	}
	zSampled, _, err := accountant.CalibrateNoise(1.0/n, steps, eps, delta, opts...)
	if err != nil {
		t.Fatal(err)
	}
	zFull, _, err := accountant.CalibrateNoise(1, steps, eps, delta, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if lower := max(zSampled*4*G, zFull*2*G/n); sigma < lower*(1-1e-3) {
		t.Errorf("σ = %v below the single-part requirement %v", sigma, lower)
	}
}
