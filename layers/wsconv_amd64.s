#include "textflag.h"

// WSConv2D's chain rule with AVX-512 and with AVX2 + FMA; the loops both widths share are the
// macros below. Registers: grad SI, what DI, rstd R8, f R12, k R13.

// WSROWS(KD): the arguments, k as a float64 in KD, and the head of the loop over rows.
#define WSROWS(KD) \
	MOVQ grad+0(FP), SI; \
	MOVQ what+8(FP), DI; \
	MOVQ rstd+16(FP), R8; \
	MOVQ f+24(FP), R12; \
	MOVQ k+32(FP), R13; \
	VCVTSI2SDQ R13, KD, KD; \
row: \
	TESTQ R12, R12; \
	JZ done

// PAIRS(even, odd): Σg and Σg·ŵ over the row: two blocks of 8 at a time (even, then odd, each
// into its own accumulators) while 16 values are left, then one (even); on at reduce.
#define PAIRS(even, odd) \
	XORQ BX, BX; \
pair: \
	LEAQ 16(BX), AX; \
	CMPQ AX, R13; \
	JGT single; \
	even; \
	odd; \
	MOVQ AX, BX; \
	JMP pair; \
single: \
	CMPQ BX, R13; \
	JGE reduce; \
	even; \
reduce:

// ACC512(o, A, B, S, D): S += g, D += g·ŵ for the 8 values o bytes on from BX (A, B scratch).
#define ACC512(o, A, B, S, D) \
	VCVTPS2PD o(SI)(BX*4), A; \
	VCVTPS2PD o(DI)(BX*4), B; \
	VADDPD A, S, S; \
	VFMADD231PD B, A, D

// ACC2(o, A0, A1, S0, S1, D0, D1): ACC512 in two halves of 4 lanes (lo, hi).
#define ACC2(o, A0, A1, S0, S1, D0, D1) \
	VCVTPS2PD o(SI)(BX*4), A0; \
	VCVTPS2PD (o+16)(SI)(BX*4), A1; \
	VCVTPS2PD o(DI)(BX*4), Y10; \
	VCVTPS2PD (o+16)(DI)(BX*4), Y11; \
	VADDPD A0, S0, S0; \
	VADDPD A1, S1, S1; \
	VFMADD231PD Y10, A0, D0; \
	VFMADD231PD Y11, A1, D1

#define EVEN512 ACC512(0, Z4, Z5, Z0, Z2)
#define ODD512 ACC512(32, Z6, Z7, Z1, Z3)
#define EVEN2 ACC2(0, Y8, Y9, Y0, Y1, Y4, Y5)
#define ODD2 ACC2(32, Y12, Y13, Y2, Y3, Y6, Y7)

// APPLY(KD, DOTX, MEAN, DOT, R, A, B, N, L, CVT): with Σg in X0 and Σg·ŵ in DOTX, mean =
// Σg/k (KD), then g = float32(r·((g − mean) − ŵ·dot)) in vectors of L lanes, each step a
// float64 operation (MEAN, DOT, R the broadcasts; A, B scratch; N the float32 result, CVT
// the narrowing); then on to the next row.
#define APPLY(KD, DOTX, MEAN, DOT, R, A, B, N, L, CVT) \
	VDIVSD KD, X0, X0; \
	VBROADCASTSD X0, MEAN; \
	VBROADCASTSD DOTX, DOT; \
	VCVTSS2SD (R8), X10, X10; \
	VBROADCASTSD X10, R; \
	XORQ BX, BX; \
apply: \
	CMPQ BX, R13; \
	JGE next; \
	VCVTPS2PD (SI)(BX*4), A; \
	VSUBPD MEAN, A, A; \
	VCVTPS2PD (DI)(BX*4), B; \
	VMULPD DOT, B, B; \
	VSUBPD B, A, A; \
	VMULPD R, A, A; \
	CVT A, N; \
	VMOVUPS N, (SI)(BX*4); \
	ADDQ $L, BX; \
	JMP apply; \
next: \
	LEAQ (SI)(R13*4), SI; \
	LEAQ (DI)(R13*4), DI; \
	ADDQ $4, R8; \
	DECQ R12; \
	JMP row; \
done: \
	VZEROUPPER; \
	RET

// func wsChain32AVX512(grad, what, rstd *float32, f, k int)
// WSConv2D's chain rule on f rows of k values (k a multiple of 8), in place: for each
// row, sum = Σg and dot = Σg·ŵ in float64 (8 lanes, even and odd blocks of 8 apart,
// added at the end), mean = sum/k, then g = float32(r·((g − mean) − ŵ·dot)) with the
// row's r, each step a float64 operation.
TEXT ·wsChain32AVX512(SB), NOSPLIT, $0-40
	WSROWS(X15)
	VPXORQ Z0, Z0, Z0 // Σg, even blocks
	VPXORQ Z1, Z1, Z1 // Σg, odd blocks
	VPXORQ Z2, Z2, Z2 // Σg·ŵ, even
	VPXORQ Z3, Z3, Z3 // Σg·ŵ, odd
	PAIRS(EVEN512, ODD512)
	VADDPD Z1, Z0, Z0
	VADDPD Z3, Z2, Z2
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VEXTRACTF64X4 $1, Z2, Y3
	VADDPD Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VADDPD X3, X2, X2
	VPERMILPD $1, X2, X3
	VADDSD X3, X2, X2
	APPLY(X15, X2, Z8, Z9, Z10, Z4, Z5, Y4, 8, VCVTPD2PS)

// func wsChain32AVX2(grad, what, rstd *float32, f, k int)
// wsChain32AVX512 on AVX2 + FMA, bit for bit: each 8-lane float64 accumulator of the
// AVX-512 kernel is a pair of 4-lane ones here (lo = lanes 0–3, hi = lanes 4–7), and the
// reduction adds the same lanes in the same order (even + odd blocks, then lo + hi, then
// the 128-bit halves, then the last pair).
TEXT ·wsChain32AVX2(SB), NOSPLIT, $0-40
	WSROWS(X14)
	VXORPD Y0, Y0, Y0 // Σg even blocks, lo
	VXORPD Y1, Y1, Y1 // Σg even, hi
	VXORPD Y2, Y2, Y2 // Σg odd, lo
	VXORPD Y3, Y3, Y3 // Σg odd, hi
	VXORPD Y4, Y4, Y4 // Σg·ŵ even, lo
	VXORPD Y5, Y5, Y5 // Σg·ŵ even, hi
	VXORPD Y6, Y6, Y6 // Σg·ŵ odd, lo
	VXORPD Y7, Y7, Y7 // Σg·ŵ odd, hi
	PAIRS(EVEN2, ODD2)
	VADDPD Y2, Y0, Y0 // even + odd, lanes 0–3
	VADDPD Y3, Y1, Y1 // lanes 4–7
	VADDPD Y1, Y0, Y0 // lanes l + l+4
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VADDPD Y6, Y4, Y4
	VADDPD Y7, Y5, Y5
	VADDPD Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD X5, X4, X4
	VPERMILPD $1, X4, X5
	VADDSD X5, X4, X4
	APPLY(X14, X4, Y8, Y9, Y10, Y4, Y5, X4, 4, VCVTPD2PSY)
