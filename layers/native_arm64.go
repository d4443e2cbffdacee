package layers

import "github.com/privtrain/privtrain/internal/cpupath"

// useNEON selects the ASIMD kernels of native_arm64.s for float32: the path internal/cpupath
// decided (NEON on every arm64 CPU, unless PRIVTRAIN_CPU or a test forces generic), and not
// while a test compares them with their Go versions (goKernels).
func useNEON() bool { return !goKernels && cpupath.Current() == cpupath.NEON }

//go:noescape
func relu32NEON(dst, src *float32, n int)

//go:noescape
func reluGrad32NEON(dz, grad, y *float32, n int)

//go:noescape
func maxPoolForward32NEON(x, y *float32, idx *int32, cells, start *int32, npix, c int)

//go:noescape
func patchCopy32NEON(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)

//go:noescape
func patchAdd32NEON(dx, du *float32, runs *int32, start *int32, npos, k int)
