#include "textflag.h"

// func wsChain32AVX512(grad, what, rstd *float32, f, k int)
// WSConv2D's chain rule on f rows of k values (k a multiple of 8), in place: for each
// row, sum = Σg and dot = Σg·ŵ in float64 (8 lanes, even and odd blocks of 8 apart,
// added at the end), mean = sum/k, then g = float32(r·((g − mean) − ŵ·dot)) with the
// row's r, each step a float64 operation.
TEXT ·wsChain32AVX512(SB), NOSPLIT, $0-40
	MOVQ grad+0(FP), SI
	MOVQ what+8(FP), DI
	MOVQ rstd+16(FP), R8
	MOVQ f+24(FP), R12
	MOVQ k+32(FP), R13
	VCVTSI2SDQ R13, X15, X15
ws_row:
	TESTQ R12, R12
	JZ ws_done
	VPXORQ Z0, Z0, Z0 // Σg, even blocks
	VPXORQ Z1, Z1, Z1 // Σg, odd blocks
	VPXORQ Z2, Z2, Z2 // Σg·ŵ, even
	VPXORQ Z3, Z3, Z3 // Σg·ŵ, odd
	XORQ BX, BX
ws_pair:
	LEAQ 16(BX), AX
	CMPQ AX, R13
	JGT ws_single
	VCVTPS2PD (SI)(BX*4), Z4
	VCVTPS2PD (DI)(BX*4), Z5
	VADDPD Z4, Z0, Z0
	VFMADD231PD Z5, Z4, Z2
	VCVTPS2PD 32(SI)(BX*4), Z6
	VCVTPS2PD 32(DI)(BX*4), Z7
	VADDPD Z6, Z1, Z1
	VFMADD231PD Z7, Z6, Z3
	MOVQ AX, BX
	JMP ws_pair
ws_single:
	CMPQ BX, R13
	JGE ws_reduce
	VCVTPS2PD (SI)(BX*4), Z4
	VCVTPS2PD (DI)(BX*4), Z5
	VADDPD Z4, Z0, Z0
	VFMADD231PD Z5, Z4, Z2
ws_reduce:
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
	VDIVSD X15, X0, X0
	VBROADCASTSD X0, Z8  // mean
	VBROADCASTSD X2, Z9  // dot
	VCVTSS2SD (R8), X10, X10
	VBROADCASTSD X10, Z10 // r
	XORQ BX, BX
ws_apply:
	CMPQ BX, R13
	JGE ws_next
	VCVTPS2PD (SI)(BX*4), Z4
	VSUBPD Z8, Z4, Z4
	VCVTPS2PD (DI)(BX*4), Z5
	VMULPD Z9, Z5, Z5
	VSUBPD Z5, Z4, Z4
	VMULPD Z10, Z4, Z4
	VCVTPD2PS Z4, Y4
	VMOVUPS Y4, (SI)(BX*4)
	ADDQ $8, BX
	JMP ws_apply
ws_next:
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	ADDQ $4, R8
	DECQ R12
	JMP ws_row
ws_done:
	VZEROUPPER
	RET

// func wsChain32AVX2(grad, what, rstd *float32, f, k int)
// wsChain32AVX512 on AVX2 + FMA, bit for bit: each 8-lane float64 accumulator of the
// AVX-512 kernel is a pair of 4-lane ones here (lo = lanes 0–3, hi = lanes 4–7), and the
// reduction adds the same lanes in the same order (even + odd blocks, then lo + hi, then
// the 128-bit halves, then the last pair).
TEXT ·wsChain32AVX2(SB), NOSPLIT, $0-40
	MOVQ grad+0(FP), SI
	MOVQ what+8(FP), DI
	MOVQ rstd+16(FP), R8
	MOVQ f+24(FP), R12
	MOVQ k+32(FP), R13
	VCVTSI2SDQ R13, X14, X14 // k
ws2_row:
	TESTQ R12, R12
	JZ ws2_done
	VXORPD Y0, Y0, Y0 // Σg even blocks, lo
	VXORPD Y1, Y1, Y1 // Σg even, hi
	VXORPD Y2, Y2, Y2 // Σg odd, lo
	VXORPD Y3, Y3, Y3 // Σg odd, hi
	VXORPD Y4, Y4, Y4 // Σg·ŵ even, lo
	VXORPD Y5, Y5, Y5 // Σg·ŵ even, hi
	VXORPD Y6, Y6, Y6 // Σg·ŵ odd, lo
	VXORPD Y7, Y7, Y7 // Σg·ŵ odd, hi
	XORQ BX, BX
ws2_pair:
	LEAQ 16(BX), AX
	CMPQ AX, R13
	JGT ws2_single
	VCVTPS2PD (SI)(BX*4), Y8
	VCVTPS2PD 16(SI)(BX*4), Y9
	VCVTPS2PD (DI)(BX*4), Y10
	VCVTPS2PD 16(DI)(BX*4), Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VFMADD231PD Y10, Y8, Y4
	VFMADD231PD Y11, Y9, Y5
	VCVTPS2PD 32(SI)(BX*4), Y12
	VCVTPS2PD 48(SI)(BX*4), Y13
	VCVTPS2PD 32(DI)(BX*4), Y10
	VCVTPS2PD 48(DI)(BX*4), Y11
	VADDPD Y12, Y2, Y2
	VADDPD Y13, Y3, Y3
	VFMADD231PD Y10, Y12, Y6
	VFMADD231PD Y11, Y13, Y7
	MOVQ AX, BX
	JMP ws2_pair
ws2_single:
	CMPQ BX, R13
	JGE ws2_reduce
	VCVTPS2PD (SI)(BX*4), Y8
	VCVTPS2PD 16(SI)(BX*4), Y9
	VCVTPS2PD (DI)(BX*4), Y10
	VCVTPS2PD 16(DI)(BX*4), Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VFMADD231PD Y10, Y8, Y4
	VFMADD231PD Y11, Y9, Y5
ws2_reduce:
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
	VDIVSD X14, X0, X0
	VBROADCASTSD X0, Y8  // mean
	VBROADCASTSD X4, Y9  // dot
	VCVTSS2SD (R8), X10, X10
	VBROADCASTSD X10, Y10 // r
	XORQ BX, BX
ws2_apply:
	CMPQ BX, R13
	JGE ws2_next
	VCVTPS2PD (SI)(BX*4), Y4
	VSUBPD Y8, Y4, Y4
	VCVTPS2PD (DI)(BX*4), Y5
	VMULPD Y9, Y5, Y5
	VSUBPD Y5, Y4, Y4
	VMULPD Y10, Y4, Y4
	VCVTPD2PSY Y4, X4
	VMOVUPS X4, (SI)(BX*4)
	ADDQ $4, BX
	JMP ws2_apply
ws2_next:
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	ADDQ $4, R8
	DECQ R12
	JMP ws2_row
ws2_done:
	VZEROUPPER
	RET
