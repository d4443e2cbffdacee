package erm

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/privtrain/privtrain/erm/data"
)

// normalizedProblem builds a small problem on the synthetic covariates,
// normalised as the papers do (max-abs per feature, unit rows). For the
// squared loss the labels are a linear signal plus noise.
func normalizedProblem(t testing.TB, loss Loss, n, d int, lambda float64, seed uint64) *Problem {
	t.Helper()
	ds, err := data.Synthetic(n, d, seed)
	if err != nil {
		t.Fatal(err)
	}
	// Centre the covariates so the classes are not all on one side.
	rng := rand.New(rand.NewPCG(seed, 99))
	w := make([]float64, d)
	for j := range w {
		w[j] = rng.NormFloat64()
	}
	for i := range n {
		row := ds.X.RawRowView(i)
		for j := range row {
			row[j] -= 0.5
		}
		z := floats.Dot(row, w)
		if loss.Classification() {
			ds.Y[i] = 1
			if z+0.3*rng.NormFloat64() < 0 { // label noise: not separable
				ds.Y[i] = -1
			}
		} else {
			ds.Y[i] = z + 0.1*rng.NormFloat64()
		}
	}
	ds.Normalize()
	return &Problem{Data: ds, Loss: loss, Lambda: lambda}
}

func mustOptimum(t testing.TB, p *Problem) *Optimum {
	t.Helper()
	o, err := FindOptimum(p)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// relGap returns (F(x) − F*)/|F*|.
func relGap(p *Problem, o *Optimum, x []float64) float64 {
	return (p.Value(x) - o.Value) / abs(o.Value)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
