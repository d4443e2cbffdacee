package erm

import (
	"testing"

	"github.com/privtrain/privtrain/erm/data"
)

func benchProblem(b *testing.B) *Problem {
	ds, err := data.Synthetic(100000, 20, 1)
	if err != nil {
		b.Fatal(err)
	}
	return &Problem{Data: ds, Loss: Logistic{}, Lambda: 0.02}
}

// BenchmarkGradient is one full gradient of the paper's synthetic problem
// (n = 1e5, d = 20, about 4e6 flops).
func BenchmarkGradient(b *testing.B) {
	p := benchProblem(b)
	w := constant(0.1, 20)
	g := make([]float64, 20)
	for b.Loop() {
		p.Gradient(g, w)
	}
}

// BenchmarkSCDEpoch is one epoch of dual DP-SCD (L = 100) on the same data,
// normalised: 1000 rounds of 100 coordinate steps plus noise on v.
func BenchmarkSCDEpoch(b *testing.B) {
	p := benchProblem(b)
	p.Data.Normalize()
	a := &SCD{Epsilon: 1, Delta: 1e-3, Epochs: 1, BatchSize: 100}
	c, err := checkSCD(p, a.Epsilon, a.Delta, a.Epochs, a.BatchSize, 1, p.Len())
	if err != nil {
		b.Fatal(err)
	}
	rng := NewNoise(1)
	for b.Loop() {
		a.iterate(p, rng, c, 1.0)
	}
}

// BenchmarkSVRGEpoch is one DP-SVRG epoch (full gradient plus m = n inner
// steps) on the normalised data.
func BenchmarkSVRGEpoch(b *testing.B) {
	p := benchProblem(b)
	p.Data.Normalize()
	a := &SVRG{Epsilon: 1, Delta: 1e-3, Epochs: 1, InnerSteps: p.Len()}
	c, m, T, err := a.plan(p)
	if err != nil {
		b.Fatal(err)
	}
	rng := NewNoise(1)
	for b.Loop() {
		a.iterate(p, rng, c, m, T, 0.1)
	}
}

// BenchmarkSCDCalibration is the accountant call DP-SCD makes once per run
// (orders up to 1024, MSD-sized: q = 1000/347786, T = 17389).
func BenchmarkSCDCalibration(b *testing.B) {
	for b.Loop() {
		if _, _, err := scdNoise(1000.0/347786, 17389, 1, 1e-3, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSVRGCalibration is DP-SVRG's ledger calibration with the
// variance split (n = 1e5, 15 epochs of 5000 inner steps as in the paper).
func BenchmarkSVRGCalibration(b *testing.B) {
	for b.Loop() {
		if _, _, _, err := svrgNoise(1, 1e-3, 75000, 100000, 1, 1, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOptimum is the certified Newton optimum of the synthetic problem.
func BenchmarkOptimum(b *testing.B) {
	p := benchProblem(b)
	for b.Loop() {
		if _, err := FindOptimum(p); err != nil {
			b.Fatal(err)
		}
	}
}
