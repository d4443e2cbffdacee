package accountant

import (
	"math"
	"testing"
)

// BenchmarkEpsilon: ε of a ledger holding 100,000 steps in 3 segments over
// the default orders extended to 256 (357 orders).
func BenchmarkEpsilon(b *testing.B) {
	l := NewLedger(WithOrders(OrdersUpTo(256)))
	for _, s := range []Segment{{256.0 / 60000, 1.1, 40000}, {512.0 / 60000, 1.3, 30000}, {256.0 / 60000, 0.9, 30000}} {
		if err := l.Record(s.Q, s.Z, s.Steps); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.Epsilon(1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLedger3Segments: building that ledger (three RDP evaluations)
// and asking for ε.
func BenchmarkLedger3Segments(b *testing.B) {
	orders := OrdersUpTo(256)
	for b.Loop() {
		l := NewLedger(WithOrders(orders))
		for _, s := range []Segment{{256.0 / 60000, 1.1, 40000}, {512.0 / 60000, 1.3, 30000}, {256.0 / 60000, 0.9, 30000}} {
			if err := l.Record(s.Q, s.Z, s.Steps); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := l.Epsilon(1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCalibrateNoise: the TF Privacy MNIST plan, default orders.
func BenchmarkCalibrateNoise(b *testing.B) {
	for b.Loop() {
		if _, _, err := CalibrateNoise(256.0/60000, 14040, 3, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCalibrateNoise1024: a small-ε plan that needs orders to 1024.
func BenchmarkCalibrateNoise1024(b *testing.B) {
	orders := OrdersUpTo(1024)
	for b.Loop() {
		if _, _, err := CalibrateNoise(1000.0/347786, 17389, 0.1, 1e-3, WithOrders(orders)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordDistinctZ: one ADP-SGD step, whose z differs from the last
// (an RDP evaluation at the 151 default orders).
func BenchmarkRecordDistinctZ(b *testing.B) {
	l := NewLedger()
	t := 0
	for b.Loop() {
		t++
		if err := l.Record(256.0/60000, 0.8+1/math.Sqrt(float64(t)), 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordSameZ: one DP-SGD step with the noise of the previous step.
func BenchmarkRecordSameZ(b *testing.B) {
	l := NewLedger()
	for b.Loop() {
		if err := l.Record(256.0/60000, 1.1, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPLDEpsilon15000: the PLD ε of a 15,000-step constant plan (the TF
// Privacy MNIST sampling rate), both directions, Δ = 1e-4.
func BenchmarkPLDEpsilon15000(b *testing.B) {
	h := []Segment{{256.0 / 60000, 1.1, 15000}}
	for b.Loop() {
		if _, err := (PLD{}).Epsilon(h, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPLDCalibrate: the PLD noise for ε = 3 on the MNIST tutorial plan.
func BenchmarkPLDCalibrate(b *testing.B) {
	for b.Loop() {
		if _, _, err := (PLD{}).CalibrateNoise(256.0/60000, 14063, 3, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// adpHistory is an 11,700-step ADP-SGD schedule as dpoptim.ADPPolynomial(η,
// 19, 1) records it: z_t = z·(20 + t)^{1/4}, q = 256/50,000 (the ADP paper's
// CIFAR-10 plan), every step with its own multiplier.
func adpHistory(z float64) []Segment {
	h := make([]Segment, 11700)
	for t := range h {
		h[t] = Segment{Q: 256.0 / 50000, Z: z * math.Sqrt(math.Sqrt(20+float64(t))), Steps: 1}
	}
	return h
}

// BenchmarkPLDADPSchedule: the PLD ε of that schedule at base z = 0.3
// (ε ≈ 1.4 at δ = 1e-5).
func BenchmarkPLDADPSchedule(b *testing.B) {
	h := adpHistory(0.3)
	for b.Loop() {
		if _, err := (PLD{}).Epsilon(h, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRDPADPSchedule: the same schedule by the RDP accountant with the
// z grid of ratio 1+1e-3 (without it: one RDP evaluation per step).
func BenchmarkRDPADPSchedule(b *testing.B) {
	h := adpHistory(0.3)
	for b.Loop() {
		if _, err := (RDP{GridRatio: 1e-3}).Epsilon(h, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}
