//go:build !amd64

package gemm

func tanh32AVX512(dst, src, bias *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
func sigmoid32AVX512(dst, src, bias *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
func tanhGrad32AVX512(dz, grad, out *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
func sigmoidGrad32AVX512(dz, grad, out *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
func tanh32AVX2(dst, src, bias *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
func sigmoid32AVX2(dst, src, bias *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
func tanhGrad32AVX2(dz, grad, out *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
func sigmoidGrad32AVX2(dz, grad, out *float32, n int) {
	panic("gemm: no assembly kernels on this architecture")
}
