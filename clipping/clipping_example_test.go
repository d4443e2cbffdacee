package clipping_test

import (
	"fmt"

	"github.com/privtrain/privtrain/clipping"
)

func ExamplePerLayer() {
	// Two parametrised layers with thresholds 3 and 4: one example's clipped gradient
	// has norm at most 5.
	fmt.Println(clipping.PerLayer{C: []float64{3, 4}}.Bound())
	// Output: 5
}
