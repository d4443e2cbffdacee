// Package gemm is privtrain's matrix multiply: C = A·B (+ C, or + a bias row), optionally
// clamped at zero, for the shapes a small network's training step makes — tall-and-narrow
// products of im2col'd inputs with filters, and per-example weight gradients.
//
// B and C are row-major. A is row-major or column-major, so that a product with Aᵀ needs no
// transposed copy: every GEMM of the private step maps onto this one form without packing.
//
// On amd64 float32 products run on generated assembly micro-kernels (gen_kernels.go): with
// AVX-512, blocks of up to 12 rows × 64 columns of C held in ZMM registers, the last
// partial vector of a row masked; with AVX2 + FMA, up to 12 rows × 16 columns in YMM
// registers, the last vector's lanes counted. B's rows are loaded as vectors, A's entries
// broadcast, and the bias and ReLU applied on the way out; both accumulate each value of C
// over k in the same order, so the two paths' products are equal bit for bit
// (TestGemmAVX2MatchesAVX512). On arm64 (cpupath.NEON) they run on generated ASIMD kernels
// (gen_neon.go): blocks of up to 12 rows × 16 columns in the 32 V registers, FMLA by
// element from vectors of A, the last 1–3 columns on kernels that load and store them lane
// by lane. Elsewhere (the generic path of internal/cpupath), and for float64, it calls
// gonum's BLAS through blas32/blas64.Implementation (OpenBLAS under the openblas build tag).
//
// SumSquares, the float64 sum of squares behind per-example norms, runs on AVX-512, AVX2 +
// FMA or NEON kernels (vector_amd64.s, vector_arm64.s) that sum in the same 32 float64 lanes
// and so agree bit for bit; the pure-Go loop sums in 4, within 1e-13 relative of either.
//
// The activations a product feeds are here too: Tanh and Sigmoid on slices (TanhBias and
// SigmoidBias add a per-column bias first), and TanhGrad and SigmoidGrad, the backward
// step from the activation's output. float32 runs on generated AVX-512 or AVX2 kernels
// (gen_act.go) or a pure-Go loop of the same method, within a few ulps of the correctly
// rounded value over the whole float32 range (act_test.go); float64 uses math.Tanh and
// math.Exp.
package gemm

//go:generate go run gen_kernels.go
//go:generate go run gen_neon.go
//go:generate go run gen_act.go
