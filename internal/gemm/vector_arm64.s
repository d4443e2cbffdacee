#include "textflag.h"

// ZERO4(a, b, c, d) clears four vector registers.
#define ZERO4(a, b, c, d) \
	VEOR a.B16, a.B16, a.B16; \
	VEOR b.B16, b.B16, b.B16; \
	VEOR c.B16, c.B16, c.B16; \
	VEOR d.B16, d.B16, d.B16

// SQUARES16(A0, …, A7): the next 16 float32 at R0 (R0 moves on), widened to float64 in
// V4–V11, their squares added into A0–A7 (2 lanes each) by fused multiply-adds.
#define SQUARES16(A0, A1, A2, A3, A4, A5, A6, A7) \
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	WORD $0x0e617804; /* FCVTL V4.2D, V0.2S */ \
	WORD $0x4e617805; /* FCVTL2 V5.2D, V0.4S */ \
	WORD $0x0e617826; /* FCVTL V6.2D, V1.2S */ \
	WORD $0x4e617827; /* FCVTL2 V7.2D, V1.4S */ \
	WORD $0x0e617848; /* FCVTL V8.2D, V2.2S */ \
	WORD $0x4e617849; /* FCVTL2 V9.2D, V2.4S */ \
	WORD $0x0e61786a; /* FCVTL V10.2D, V3.2S */ \
	WORD $0x4e61786b; /* FCVTL2 V11.2D, V3.4S */ \
	VFMLA V4.D2, V4.D2, A0.D2; \
	VFMLA V5.D2, V5.D2, A1.D2; \
	VFMLA V6.D2, V6.D2, A2.D2; \
	VFMLA V7.D2, V7.D2, A3.D2; \
	VFMLA V8.D2, V8.D2, A4.D2; \
	VFMLA V9.D2, V9.D2, A5.D2; \
	VFMLA V10.D2, V10.D2, A6.D2; \
	VFMLA V11.D2, V11.D2, A7.D2

// func sumSquaresNEON(x *float32, n int) float64
// Σ x_j² over n values (n a multiple of 32) in the lane order of sumSquares32, the AVX-512
// kernel (vector_amd64.s), so the two give the same bits: 32 float64 lanes, lane l summing
// the x_j with j ≡ l (mod 32) by fused multiply-adds in order of j (here 16 registers of 2
// lanes, V16 + 4q + r holding the AVX-512 accumulator Zq's lanes 2r and 2r+1), then
// Z0+Z1, Z2+Z3, their sum, its upper 4 lanes onto its lower 4, 2 onto 2, 1 onto 1. Go's
// assembler lacks FCVTL, FADD .2D and FADDP: WORDs.
TEXT ·sumSquaresNEON(SB), NOSPLIT, $0-24
	MOVD x+0(FP), R0
	MOVD n+8(FP), R1
	ZERO4(V16, V17, V18, V19)
	ZERO4(V20, V21, V22, V23)
	ZERO4(V24, V25, V26, V27)
	ZERO4(V28, V29, V30, V31)
	CBZ R1, reduce
loop:
	SQUARES16(V16, V17, V18, V19, V20, V21, V22, V23)
	SQUARES16(V24, V25, V26, V27, V28, V29, V30, V31)
	SUBS $32, R1, R1
	BNE loop
reduce:
	// Z0 += Z1
	WORD $0x4e74d610 // FADD V16.2D, V16.2D, V20.2D
	WORD $0x4e75d631 // FADD V17.2D, V17.2D, V21.2D
	WORD $0x4e76d652 // FADD V18.2D, V18.2D, V22.2D
	WORD $0x4e77d673 // FADD V19.2D, V19.2D, V23.2D
	// Z2 += Z3
	WORD $0x4e7cd718 // FADD V24.2D, V24.2D, V28.2D
	WORD $0x4e7dd739 // FADD V25.2D, V25.2D, V29.2D
	WORD $0x4e7ed75a // FADD V26.2D, V26.2D, V30.2D
	WORD $0x4e7fd77b // FADD V27.2D, V27.2D, V31.2D
	// Z0 += Z2
	WORD $0x4e78d610 // FADD V16.2D, V16.2D, V24.2D
	WORD $0x4e79d631 // FADD V17.2D, V17.2D, V25.2D
	WORD $0x4e7ad652 // FADD V18.2D, V18.2D, V26.2D
	WORD $0x4e7bd673 // FADD V19.2D, V19.2D, V27.2D
	// lanes 0-3 += lanes 4-7
	WORD $0x4e72d610 // FADD V16.2D, V16.2D, V18.2D
	WORD $0x4e73d631 // FADD V17.2D, V17.2D, V19.2D
	// lanes 0-1 += lanes 2-3
	WORD $0x4e71d610 // FADD V16.2D, V16.2D, V17.2D
	// lane 0 + lane 1
	WORD $0x7e70da00 // FADDP D0, V16.2D
	FMOVD F0, ret+16(FP)
	RET
