//go:build !arm64

package gemm

func useNEON() bool { return false }

func sgemmNEON(m, n, k int, a Matrix[float32], b []float32, ldb int, c []float32, ldc int, bias []float32, f Flags) {
	panic("gemm: no NEON kernels on this architecture")
}

func sumSquaresNEON(x *float32, n int) float64 { panic("gemm: no NEON kernels on this architecture") }
