package layers_test

import (
	"fmt"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/layers"
)

// A dense layer with two inputs and one output, batch of two. Example 0 has input
// (3, 4) and ∂loss/∂z = 1: its gradient is (3, 4) for the weight and 1 for the bias, norm
// √26 ≈ 5.099, so with C = 1 it is scaled by 1/√26. Example 1 is padding.
func ExampleDenseGradient() {
	layer := &layers.DenseGradient[float64]{
		InDim: 2, OutDim: 1, Bias: true,
		In:    []float64{3, 4, 100, 100},
		GradZ: []float64{1, 100},
	}
	ws, err := clipping.NewWorkspace([]clipping.Gradient[float64]{layer}, 2)
	if err != nil {
		panic(err)
	}
	sum := make([]float64, ws.NumParams())
	rule := clipping.Flat{C: 1}
	st, err := ws.ClippedSum([]bool{true, false}, rule, sum)
	if err != nil {
		panic(err)
	}
	fmt.Printf("norms %.3f, clipped %d, sum %.3f, sensitivity %v\n", st.Norms, st.Clipped, sum, rule.Bound())
	// Output: norms [5.099 0.000], clipped 1, sum [0.588 0.784 0.196], sensitivity 1
}
