package layers

import "golang.org/x/sys/cpu"

// useAsm selects the AVX-512 kernels of native_amd64.s for float32 (x/sys/cpu also checks
// that the OS saves the ZMM and mask registers); useAVX2 the AVX2 versions of some of them.
var (
	useAsm  = cpu.X86.HasAVX512F
	useAVX2 = cpu.X86.HasAVX2
)

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
