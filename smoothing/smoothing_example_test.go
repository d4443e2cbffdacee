package smoothing_test

import (
	"fmt"

	"github.com/privtrain/privtrain/smoothing"
)

// Smoothing one vector: A_σ⁻¹ with σ = 2 on (1, 2, 3, 4, 5). The sum is preserved and the
// values are pulled towards their periodic neighbours.
func ExampleSolver() {
	s, err := smoothing.NewSolver[float64](5, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	v := []float64{1, 2, 3, 4, 5}
	if err := s.Solve(v, v); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.6f\n", v)
	// Output: [2.612903 2.645161 3.000000 3.354839 3.387097]
}

// Smoothing a model's gradient tensor by tensor, as DP-LSSGD does after adding the noise.
// The 2×4 weight is one periodic vector of 8 values; the bias is smoothed on its own.
func ExampleLaplacian() {
	layout := []smoothing.Tensor{
		{Name: "dense/W", Shape: []int{2, 4}}, // flattened row-major: 8 values
		{Name: "dense/b", Shape: []int{2}},
	}
	lap, err := smoothing.NewLaplacian[float32](1, layout)
	if err != nil {
		fmt.Println(err)
		return
	}
	grad := []float32{1, 0, 0, 0, 0, 0, 0, 0, 1, 0}
	if err := lap.Smooth(grad); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f\n", grad)
	// Output: [0.4476 0.1714 0.0667 0.0286 0.0190 0.0286 0.0667 0.1714 0.6000 0.4000]
}

func ExampleGamma() {
	for _, sigma := range []float64{1, 2, 3} {
		g, _ := smoothing.Gamma(sigma, 1000)
		b, _ := smoothing.Beta(sigma, 1000)
		fmt.Printf("σ=%v γ=%.3f β=%.3f\n", sigma, g, b)
	}
	// Output:
	// σ=1 γ=0.447 β=0.268
	// σ=2 γ=0.333 β=0.185
	// σ=3 γ=0.277 β=0.149
}
