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
