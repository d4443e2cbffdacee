//go:build openblas

package gemm

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

// With the openblas build tag, products that do not run on the AVX-512 kernels (float64,
// and float32 on CPUs without AVX-512) go to OpenBLAS through cgo.
func init() {
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
}
