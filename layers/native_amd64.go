package layers

import "github.com/privtrain/privtrain/internal/cpupath"

// useAsm selects the AVX-512 kernels of this package's assembly for float32, useAVX2 the
// AVX2 + FMA ones (every AVX-512 kernel has an AVX2 twin, which does its arithmetic in the
// same order): the path internal/cpupath decided (the best the CPU runs, or a lower one
// forced by PRIVTRAIN_CPU or a test).
func useAsm() bool { return !goKernels && cpupath.Current() == cpupath.AVX512 }

func useAVX2() bool {
	p := cpupath.Current()
	return !goKernels && (p == cpupath.AVX2 || p == cpupath.AVX512)
}

// goKernels, set only by tests, makes this package's kernels take their Go versions whatever
// the path while internal/gemm's products stay on it, so that a path's kernels can be compared
// with Go's bit for bit.
var goKernels bool

//go:noescape
func maxPoolForward32AVX2(x, y *float32, idx *int32, cells, start *int32, npix, c int)

//go:noescape
func maxPoolBackward32AVX2(dx, grad *float32, idx *int32, cells, start *int32, npix, c int)

//go:noescape
func reluGrad32AVX2(dz, grad, y *float32, n int)

//go:noescape
func maxPoolForward32(x, y *float32, idx *int32, cells, start *int32, npix, c int)

//go:noescape
func maxPoolBackward32(dx, grad *float32, idx *int32, cells, start *int32, npix, c int)

//go:noescape
func patchCopy32(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)

//go:noescape
func patchAdd32(dx, du *float32, runs *int32, start *int32, npos, k int)

//go:noescape
func reluGrad32AVX(dz, grad, y *float32, n int)

//go:noescape
func gnSums32AVX512(a, b *float32, sa, sab *float64, p, c int)

//go:noescape
func gnNorm32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)

//go:noescape
func gnGrad32AVX512(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int)

//go:noescape
func wsChain32AVX512(grad, what, rstd *float32, f, k int)

//go:noescape
func relu32AVX512(dst, src *float32, n int)

//go:noescape
func gnSumsMasked32AVX512(a, b, y *float32, sa, sab *float64, p, c int)

//go:noescape
func gnNormReLU32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)

//go:noescape
func gnGradMasked32AVX512(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int)

//go:noescape
func relu32AVX2(dst, src *float32, n int)

//go:noescape
func patchCopy32AVX2(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)

//go:noescape
func patchAdd32AVX2(dx, du *float32, runs *int32, start *int32, npos, k int)

//go:noescape
func gnSums32AVX2(a, b *float32, sa, sab *float64, p, c int)

//go:noescape
func gnSumsMasked32AVX2(a, b, y *float32, sa, sab *float64, p, c int)

//go:noescape
func gnNorm32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)

//go:noescape
func gnNormReLU32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)

//go:noescape
func gnGrad32AVX2(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int)

//go:noescape
func gnGradMasked32AVX2(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int)

//go:noescape
func wsChain32AVX2(grad, what, rstd *float32, f, k int)

//go:noescape
func winoIn2AVX2(x, v *float32, rs, cs, plane, n int)

//go:noescape
func winoOut2AVX2(m, out *float32, plane, gs, n int)
