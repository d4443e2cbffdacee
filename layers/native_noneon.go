//go:build !arm64

package layers

func useNEON() bool { return false }

func relu32NEON(dst, src *float32, n int) { panic("layers: no NEON kernels") }

func reluGrad32NEON(dz, grad, y *float32, n int) { panic("layers: no NEON kernels") }

func maxPoolForward32NEON(x, y *float32, idx *int32, cells, start *int32, npix, c int) {
	panic("layers: no NEON kernels")
}

func patchCopy32NEON(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int) {
	panic("layers: no NEON kernels")
}

func patchAdd32NEON(dx, du *float32, runs *int32, start *int32, npos, k int) {
	panic("layers: no NEON kernels")
}
