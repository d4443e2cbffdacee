//go:build !amd64

package gemm

// The AVX2 kernels' stubs elsewhere (useAVX2 is false there), in a file of their own so
// that other architectures' kernel files stay theirs.

func sumSquares32AVX2(x *float32, n int) float64 {
	panic("gemm: no assembly kernels on this architecture")
}
