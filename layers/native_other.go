//go:build !amd64

package layers

func useAsm() bool { return false }

func useAVX2() bool { return false }

func maxPoolForward32AVX2(x, y *float32, idx *int32, cells, start *int32, npix, c int) {
	panic("layers: no assembly kernels")
}

func maxPoolBackward32AVX2(dx, grad *float32, idx *int32, cells, start *int32, npix, c int) {
	panic("layers: no assembly kernels")
}

func reluGrad32AVX2(dz, grad, y *float32, n int) { panic("layers: no assembly kernels") }

func maxPoolForward32(x, y *float32, idx *int32, cells, start *int32, npix, c int) {
	panic("layers: no assembly kernels")
}

func maxPoolBackward32(dx, grad *float32, idx *int32, cells, start *int32, npix, c int) {
	panic("layers: no assembly kernels")
}

func patchCopy32(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int) {
	panic("layers: no assembly kernels")
}

func patchAdd32(dx, du *float32, runs *int32, start *int32, npos, k int) {
	panic("layers: no assembly kernels")
}

func reluGrad32AVX(dz, grad, y *float32, n int) { panic("layers: no assembly kernels") }

func gnSums32AVX512(a, b *float32, sa, sab *float64, p, c int) {
	panic("layers: no assembly kernels")
}

func gnNorm32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int) {
	panic("layers: no assembly kernels")
}

func gnGrad32AVX512(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int) {
	panic("layers: no assembly kernels")
}

func wsChain32AVX512(grad, what, rstd *float32, f, k int) { panic("layers: no assembly kernels") }

func relu32AVX512(dst, src *float32, n int) { panic("layers: no assembly kernels") }

func gnSumsMasked32AVX512(a, b, y *float32, sa, sab *float64, p, c int) {
	panic("layers: no assembly kernels")
}

func gnNormReLU32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int) {
	panic("layers: no assembly kernels")
}

func gnGradMasked32AVX512(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int) {
	panic("layers: no assembly kernels")
}

// goKernels: see native_amd64.go (on arm64 it also switches off the NEON kernels).
var goKernels bool
