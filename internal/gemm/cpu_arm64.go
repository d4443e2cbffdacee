package gemm

import (
	"unsafe"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// useNEON selects the ASIMD kernels (kernels_arm64.s, vector_arm64.s): the path
// internal/cpupath decided, NEON on every arm64 CPU unless PRIVTRAIN_CPU or a test forces
// generic (gonum's BLAS).
func useNEON() bool { return cpupath.Current() == cpupath.NEON }

func useAVX512() bool { return false }

func useAVX2() bool { return false }

func callKernel2(colA bool, mr, nv, k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, bias *float32, flags, blocks, cblocks int) {
	panic("gemm: no AVX2 kernels on arm64")
}

func callKernel(colA bool, mr, nv, k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, bias *float32, flags, blocks, cblocks int) {
	panic("gemm: no AVX-512 kernels on arm64")
}

func sumSquares32(x *float32, n int) float64 { panic("gemm: no AVX-512 kernels on arm64") }

// sumSquaresNEON is Σ x_j² over n values (n a multiple of 32) in sumSquares32's lane order
// (32 float64 lanes of fused square-and-adds, the same reduction tree), so it gives the
// AVX-512 kernel's bits (vector_arm64.s).
//
//go:noescape
func sumSquaresNEON(x *float32, n int) float64

// sgemmNEON runs a float32 product on the NEON kernels: column blocks of up to 3 (A
// row-major) or 4 (A column-major) vectors of 4 columns, the width chosen to split the
// columns evenly and then used for every block it fits, then a tail of 1–3 columns on the
// kernels that load and store it lane by lane; each width's blocks in row blocks of the
// kernels' height for it (neonRowsR, neonRowsC), the kernel stepping through them.
func sgemmNEON(m, n, k int, a Matrix[float32], b []float32, ldb int, c []float32, ldc int, bias []float32, f Flags) {
	ap, bp := unsafe.SliceData(a.Data), unsafe.SliceData(b)
	if k == 0 {
		ap, bp = nil, nil // never read
	}
	layout, rows := 0, neonRowsR
	if a.ColMajor {
		layout, rows = 1, neonRowsC
	}
	maxNV := len(rows) - 1
	for j := 0; j < n; {
		w, slot, mr := n-j, 0, 0
		if w >= 4 {
			// The full vectors left, in blocks as even as the widest kernel allows: 16
			// columns of row-major A as 8 + 8 (4.4 FMLAs a load) rather than 12 + 4
			// (3 for the 4-column block). Each entry's sum is the same either way.
			nb := (w/4 + maxNV - 1) / maxNV
			nv := (w/4 + nb - 1) / nb
			w, slot, mr = 4*nv, nv, rows[nv]
		} else {
			slot, mr = 4+w, rows[1]
		}
		// Every block of this width that fits, in one call per height: the kernel steps
		// down the full blocks of mr rows and right along the columns of blocks. The
		// blocks' widths change no entry's sum (each is summed over k in order).
		cblocks := 1
		if slot <= 4 {
			cblocks = (n - j) / w
		}
		biasj, bj := blockColumn(bias, bp, j)
		for i := 0; i < m; {
			h, blocks := rowBlocks(i, m, mr)
			ai := blockRow(ap, a, i)
			neonKernels[layout][h][slot](k, ai, a.Stride, bj, ldb, &c[i*ldc+j], ldc, biasj, int(f), blocks, cblocks)
			i += h * blocks
		}
		j += w * cblocks
	}
}
