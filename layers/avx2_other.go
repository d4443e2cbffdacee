//go:build !amd64

package layers

// The AVX2 kernels' stubs elsewhere (useAVX2 is false there), in a file of their own so
// that other architectures' kernel files stay theirs.

func relu32AVX2(dst, src *float32, n int) { panic("layers: no AVX2 kernels") }

func patchCopy32AVX2(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int) {
	panic("layers: no AVX2 kernels")
}

func patchAdd32AVX2(dx, du *float32, runs *int32, start *int32, npos, k int) {
	panic("layers: no AVX2 kernels")
}

func gnSums32AVX2(a, b *float32, sa, sab *float64, p, c int) { panic("layers: no AVX2 kernels") }

func gnSumsMasked32AVX2(a, b, y *float32, sa, sab *float64, p, c int) {
	panic("layers: no AVX2 kernels")
}

func gnNorm32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int) {
	panic("layers: no AVX2 kernels")
}

func gnNormReLU32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int) {
	panic("layers: no AVX2 kernels")
}

func gnGrad32AVX2(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int) {
	panic("layers: no AVX2 kernels")
}

func gnGradMasked32AVX2(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int) {
	panic("layers: no AVX2 kernels")
}

func wsChain32AVX2(grad, what, rstd *float32, f, k int) { panic("layers: no AVX2 kernels") }

func winoIn2AVX2(x, v *float32, rs, cs, plane, n int) { panic("layers: no AVX2 kernels") }

func winoOut2AVX2(m, out *float32, plane, gs, n int) { panic("layers: no AVX2 kernels") }
