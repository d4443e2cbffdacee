package nn_test

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

// One logical batch of 5 examples in two physical chunks of 4 (the second padded with
// 3 masked rows), accumulated into one clipped sum.
func ExampleModel_ClippedGradient() {
	m, err := nn.New(models.MNISTCNN(models.Tanh), 4, nn.WithSeed(1))
	if err != nil {
		panic(err)
	}
	pixels := 28 * 28
	x := make([]float32, 4*pixels)
	for i := range x {
		x[i] = float32(i%pixels) / float32(pixels) // any image in [0, 1]
	}
	labels := []int{3, 1, 4, 1}
	rule := clipping.Flat{C: 0.01}
	sum := make([]float64, m.NumParams())
	chunks := []nn.Batch{
		{X: x, Labels: labels},
		{X: x, Labels: labels, Mask: []bool{true, false, false, false}},
	}
	examples := 0
	for _, b := range chunks {
		st, err := m.ClippedGradient(b, rule, sum)
		if err != nil {
			panic(err)
		}
		examples += st.Examples
	}
	var norm float64
	for _, v := range sum {
		norm += v * v
	}
	// Each example adds at most C, so the sum has norm at most 5·C.
	fmt.Println(m.NumParams(), examples, math.Sqrt(norm) <= 5*rule.Bound()*(1+1e-6))
	// Output: 26010 5 true
}
