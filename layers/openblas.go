//go:build openblas

package layers

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// With the openblas build tag, Gorgonia graphs (the Gorgonia engine) multiply through
// OpenBLAS too (G.Use also switches gorgonia.org/tensor).
func init() { G.Use(netlib.Implementation{}) }
