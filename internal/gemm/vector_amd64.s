#include "textflag.h"

// func sumSquares32(x *float32, n int) float64
// Σ x_j² over n values (n a multiple of 32), each widened to float64 before squaring and
// summed in four 8-lane float64 accumulators.
TEXT ·sumSquares32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
ss_loop:
	TESTQ CX, CX
	JZ ss_reduce
	VCVTPS2PD (SI), Z4
	VCVTPS2PD 32(SI), Z5
	VCVTPS2PD 64(SI), Z6
	VCVTPS2PD 96(SI), Z7
	VFMADD231PD Z4, Z4, Z0
	VFMADD231PD Z5, Z5, Z1
	VFMADD231PD Z6, Z6, Z2
	VFMADD231PD Z7, Z7, Z3
	ADDQ $128, SI
	SUBQ $32, CX
	JMP ss_loop
ss_reduce:
	VADDPD Z1, Z0, Z0
	VADDPD Z3, Z2, Z2
	VADDPD Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X0
	VZEROUPPER
	MOVSD X0, ret+16(FP)
	RET
