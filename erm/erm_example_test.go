package erm_test

import (
	"fmt"
	"log"

	"github.com/privtrain/privtrain/erm"
	"github.com/privtrain/privtrain/erm/data"
)

// Train logistic regression with dual DP-SCD on normalised data and measure
// the excess empirical risk against the certified optimum.
func ExampleSCD() {
	ds, err := data.Synthetic(5000, 10, 1)
	if err != nil {
		log.Fatal(err)
	}
	ds.Normalize() // unit rows: DP-SCD's sensitivity √2·C needs ‖x_i‖ ≤ 1
	p := &erm.Problem{Data: ds, Loss: erm.Logistic{}, Lambda: 1e-2}
	solver := &erm.SCD{Epsilon: 1, Delta: 1e-3, Epochs: 10, BatchSize: 10, Clip: 1}
	res, err := solver.Solve(p, erm.NewNoise(7)) // erm.NewSecureNoise() for a release
	if err != nil {
		log.Fatal(err)
	}
	opt, err := erm.FindOptimum(p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rounds: %d, ε ≤ 1: %v, δ = %g\n", res.Iterations, res.Epsilon <= 1, res.Delta)
	fmt.Println("excess risk below 0.2:", opt.ExcessRisk(p, res.X) < 0.2)
	// Output:
	// rounds: 5000, ε ≤ 1: true, δ = 0.001
	// excess risk below 0.2: true
}

// The DP accelerated methods paper's synthetic experiment: DP-NAG with the
// optimal noise split re-selects T (Remark 4.1) and spends exactly ε.
func ExampleNAG() {
	ds, err := data.Synthetic(20000, 20, 1)
	if err != nil {
		log.Fatal(err)
	}
	p := &erm.Problem{Data: ds, Loss: erm.Logistic{}, Lambda: 2 * 0.01} // the paper's λ‖x‖², λ = 0.01
	start := make([]float64, 20)
	for i := range start {
		start[i] = 10
	}
	solver := &erm.NAG{
		LaplaceSettings: erm.LaplaceSettings{Epsilon: 1, Iterations: 1000, StepMult: 1, Smoothness: p.SpectralSmoothness(), Start: start},
		Optimal:         true,
	}
	res, err := solver.Solve(p, erm.NewNoise(1))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("re-selected T < 1000: %v, pure ε = %.6f, δ = %g\n", res.Iterations < 1000, res.Epsilon, res.Delta)
	// Output:
	// re-selected T < 1000: true, pure ε = 1.000000, δ = 0
}
