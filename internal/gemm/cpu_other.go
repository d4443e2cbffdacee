//go:build !amd64 && !arm64

package gemm

func useAVX512() bool { return false }

func useAVX2() bool { return false }

func callKernel2(colA bool, mr, nv, k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, bias *float32, flags, blocks, cblocks int) {
	panic("gemm: no assembly kernels on this architecture")
}

func callKernel(colA bool, mr, nv, k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, bias *float32, flags, blocks, cblocks int) {
	panic("gemm: no assembly kernels on this architecture")
}

func sumSquares32(x *float32, n int) float64 { panic("gemm: no assembly kernels on this architecture") }
