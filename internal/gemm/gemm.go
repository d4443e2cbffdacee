package gemm

import (
	"fmt"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/privtrain/privtrain/internal/num"
)

// Float is the element type of a product (num.Float).
type Float = num.Float

// Flags modify a product.
type Flags int

const (
	// Accumulate adds the product to C instead of overwriting it (any bias is ignored).
	Accumulate Flags = 1 << iota
	flagBias         // set by Gemm when a bias row is given; the kernels' bit 1
	// ReLU replaces every result by max(result, 0).
	ReLU
)

// Matrix describes the m × k operand A: element (r, kk) is Data[r·Stride + kk], or with
// ColMajor Data[kk·Stride + r] (the row-major storage of Aᵀ).
type Matrix[T Float] struct {
	Data     []T
	Stride   int
	ColMajor bool
}

// Gemm computes the m × n matrix
//
//	C = A·B + init,   init = C (Accumulate), the row bias (len n, added to every row) or 0,
//
// then max(C, 0) with ReLU, for A m × k (see Matrix), B row-major k × n with row stride ldb,
// and C row-major with row stride ldc. It panics when a slice is too short for its shape,
// like an out-of-range index.
func Gemm[T Float](m, n, k int, a Matrix[T], b []T, ldb int, c []T, ldc int, bias []T, f Flags) {
	if m <= 0 || n <= 0 {
		return
	}
	check(m, n, k, a, b, ldb, c, ldc, bias, f)
	if f&Accumulate != 0 {
		bias = nil
	}
	if bias != nil {
		f |= flagBias
	}
	switch c := any(c).(type) {
	case []float32:
		a32 := any(a).(Matrix[float32])
		b32, bias32 := any(b).([]float32), any(bias).([]float32)
		if useAVX2() { // AVX-512 or AVX2 + FMA
			sgemmKernels(m, n, k, a32, b32, ldb, c, ldc, bias32, f)
			return
		}
		if useNEON() {
			sgemmNEON(m, n, k, a32, b32, ldb, c, ldc, bias32, f)
			return
		}
		blasGemm(m, n, k, a32, b32, ldb, c, ldc, bias32, f)
	case []float64:
		blasGemm(m, n, k, any(a).(Matrix[float64]), any(b).([]float64), ldb, c, ldc, any(bias).([]float64), f)
	}
}

func check[T Float](m, n, k int, a Matrix[T], b []T, ldb int, c []T, ldc int, bias []T, f Flags) {
	need := func(what string, have, want int) {
		if have < want {
			panic(fmt.Sprintf("gemm: %s has %d elements, the %d×%d·%d×%d product needs %d", what, have, m, k, k, n, want))
		}
	}
	if k > 0 {
		if a.ColMajor {
			need("A", len(a.Data), (k-1)*a.Stride+m)
			need("A's stride", a.Stride, m)
		} else {
			need("A", len(a.Data), (m-1)*a.Stride+k)
			need("A's stride", a.Stride, k)
		}
		need("B", len(b), (k-1)*ldb+n)
		need("B's stride", ldb, n)
	}
	need("C", len(c), (m-1)*ldc+n)
	need("C's stride", ldc, n)
	if bias != nil && f&Accumulate == 0 {
		need("bias", len(bias), n)
	}
}

// The tallest block for blocks of nv vectors: 24 accumulators of 16 lanes (AVX-512), 12 of
// 8 lanes (AVX2).
var (
	maxRows  = [5]int{0, 12, 12, 8, 6}
	maxRows2 = [3]int{0, 12, 6}
)

// sgemmKernels runs the product on the AVX-512 kernels (blocks up to 64 columns wide) or
// the AVX2 ones (16 columns).
func sgemmKernels(m, n, k int, a Matrix[float32], b []float32, ldb int, c []float32, ldc int, bias []float32, f Flags) {
	ap, bp := unsafe.SliceData(a.Data), unsafe.SliceData(b)
	if k == 0 {
		ap, bp = nil, nil // never read
	}
	lanes, rows := 16, maxRows[:]
	if !useAVX512() {
		lanes, rows = 8, maxRows2[:]
	}
	blockCols := lanes * (len(rows) - 1)
	for j := 0; j < n; {
		// The full-width columns of blocks in one call (the kernel steps right along
		// them), then the last, narrower one.
		w, cblocks := min(blockCols, n-j), 1
		if w == blockCols {
			cblocks = (n - j) / blockCols
		}
		nv := (w + lanes - 1) / lanes
		last := w - lanes*(nv-1)   // lanes of the last vector
		flags := int(f) | last<<16 // AVX2: the lane count
		if useAVX512() {
			flags = int(f) | (1<<last-1)<<16 // AVX-512: the lane mask
		}
		mr := rows[nv]
		biasj, bj := blockColumn(bias, bp, j)
		for i := 0; i < m; {
			h, blocks := rowBlocks(i, m, mr)
			ai := blockRow(ap, a, i)
			if useAVX512() {
				callKernel(a.ColMajor, h, nv, k, ai, a.Stride, bj, ldb, &c[i*ldc+j], ldc, biasj, flags, blocks, cblocks)
			} else {
				callKernel2(a.ColMajor, h, nv, k, ai, a.Stride, bj, ldb, &c[i*ldc+j], ldc, biasj, flags, blocks, cblocks)
			}
			i += h * blocks
		}
		j += w * cblocks
	}
}

// blasGemm is the portable path: a BLAS gemm, with the bias and the ReLU as separate passes.
func blasGemm[T Float](m, n, k int, a Matrix[T], b []T, ldb int, c []T, ldc int, bias []T, f Flags) {
	var beta T
	switch {
	case f&Accumulate != 0:
		beta = 1
	case bias != nil:
		for i := range m {
			copy(c[i*ldc:i*ldc+n], bias[:n])
		}
		beta = 1
	}
	if k > 0 {
		tA := blas.NoTrans
		if a.ColMajor {
			tA = blas.Trans
		}
		switch c := any(c).(type) {
		case []float32:
			blas32.Implementation().Sgemm(tA, blas.NoTrans, m, n, k, 1, any(a.Data).([]float32), a.Stride,
				any(b).([]float32), ldb, float32(beta), c, ldc)
		case []float64:
			blas64.Implementation().Dgemm(tA, blas.NoTrans, m, n, k, 1, any(a.Data).([]float64), a.Stride,
				any(b).([]float64), ldb, float64(beta), c, ldc)
		}
	} else if beta == 0 {
		for i := range m {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	if f&ReLU != 0 {
		for i := range m {
			for j, v := range c[i*ldc : i*ldc+n] {
				if v < 0 {
					c[i*ldc+j] = 0
				}
			}
		}
	}
}

// rowBlocks is the next kernel call's share of C's m rows from row i, for kernels mr rows
// high: every full block of mr rows at once (the kernel steps down them), then the rest as
// one block of its own height. Each block is computed as by a call of its own.
func rowBlocks(i, m, mr int) (h, blocks int) {
	if i == 0 && m >= mr {
		return mr, m / mr
	}
	return m - i, 1
}

// blockColumn is where a block of C's columns from j reads the bias (nil without one) and
// B (bp: B's first entry, nil when B is never read).
func blockColumn(bias []float32, bp *float32, j int) (biasj, bj *float32) {
	if bias != nil {
		biasj = &bias[j]
	}
	if bp != nil {
		bj = (*float32)(unsafe.Add(unsafe.Pointer(bp), 4*j))
	}
	return biasj, bj
}

// blockRow is where a block of C's rows from i reads A (ap: A's first entry, nil when A
// is never read): row i of A, or column i's start when A is column-major.
func blockRow(ap *float32, a Matrix[float32], i int) *float32 {
	if ap == nil {
		return nil
	}
	step := i * a.Stride
	if a.ColMajor {
		step = i
	}
	return (*float32)(unsafe.Add(unsafe.Pointer(ap), 4*step))
}
