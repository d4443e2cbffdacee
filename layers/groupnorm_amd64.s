#include "textflag.h"

// GroupNorm's per-image loops in float32 with AVX-512 (groupnorm_kernels.go has their Go
// versions, the same arithmetic in the same order): an image is p positions × c channels,
// channel innermost, c a multiple of 8 (8 channels per step, widened to float64 lanes).

// func gnSums32AVX512(a, b *float32, sa, sab *float64, p, c int)
// sa[j] = Σ_q a[q,j], sab[j] = Σ_q a[q,j]·b[q,j]: per block of 8 channels, even and odd
// positions in separate accumulators, added at the end.
TEXT ·gnSums32AVX512(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ sa+16(FP), R8
	MOVQ sab+24(FP), R9
	MOVQ p+32(FP), R12
	MOVQ c+40(FP), R13
	MOVQ R13, R14
	SHLQ $2, R14 // row stride in bytes
	XORQ BX, BX  // channel
sums_block:
	CMPQ BX, R13
	JGE sums_done
	LEAQ (SI)(BX*4), AX
	LEAQ (DI)(BX*4), DX
	VPXORQ Z0, Z0, Z0 // Σa even
	VPXORQ Z1, Z1, Z1 // Σab even
	VPXORQ Z2, Z2, Z2 // Σa odd
	VPXORQ Z3, Z3, Z3 // Σab odd
	MOVQ R12, CX
sums_pair:
	CMPQ CX, $2
	JLT sums_tail
	VCVTPS2PD (AX), Z4
	VCVTPS2PD (DX), Z5
	VADDPD Z4, Z0, Z0
	VFMADD231PD Z5, Z4, Z1
	VCVTPS2PD (AX)(R14*1), Z6
	VCVTPS2PD (DX)(R14*1), Z7
	VADDPD Z6, Z2, Z2
	VFMADD231PD Z7, Z6, Z3
	LEAQ (AX)(R14*2), AX
	LEAQ (DX)(R14*2), DX
	SUBQ $2, CX
	JMP sums_pair
sums_tail:
	TESTQ CX, CX
	JZ sums_store
	VCVTPS2PD (AX), Z4
	VCVTPS2PD (DX), Z5
	VADDPD Z4, Z0, Z0
	VFMADD231PD Z5, Z4, Z1
sums_store:
	VADDPD Z2, Z0, Z0
	VADDPD Z3, Z1, Z1
	VMOVUPD Z0, (R8)(BX*8)
	VMOVUPD Z1, (R9)(BX*8)
	ADDQ $8, BX
	JMP sums_block
sums_done:
	VZEROUPPER
	RET

// func gnNorm32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
// xh = float32((x − mean)·r), y = γ·xh + β (float32 multiply, then add).
TEXT ·gnNorm32AVX512(SB), NOSPLIT, $0-72
	MOVQ x+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ y+16(FP), DX
	MOVQ mean+24(FP), R8
	MOVQ r+32(FP), R9
	MOVQ gamma+40(FP), R10
	MOVQ beta+48(FP), R11
	MOVQ p+56(FP), R12
	MOVQ c+64(FP), R13
norm_pos:
	TESTQ R12, R12
	JZ norm_done
	XORQ BX, BX
norm_ch:
	VCVTPS2PD (SI)(BX*4), Z0
	VSUBPD (R8)(BX*8), Z0, Z0
	VMULPD (R9)(BX*8), Z0, Z0
	VCVTPD2PS Z0, Y0
	VMOVUPS Y0, (DI)(BX*4)
	VMULPS (R10)(BX*4), Y0, Y1
	VADDPS (R11)(BX*4), Y1, Y1
	VMOVUPS Y1, (DX)(BX*4)
	ADDQ $8, BX
	CMPQ BX, R13
	JLT norm_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP norm_pos
norm_done:
	VZEROUPPER
	RET

// func gnGrad32AVX512(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int)
// dx = float32(((dy·g − mg) − xh·mgx)·r), each step a float64 operation (no FMA).
TEXT ·gnGrad32AVX512(SB), NOSPLIT, $0-72
	MOVQ dy+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ dx+16(FP), DX
	MOVQ gain+24(FP), R8
	MOVQ mg+32(FP), R9
	MOVQ mgx+40(FP), R10
	MOVQ r+48(FP), R11
	MOVQ p+56(FP), R12
	MOVQ c+64(FP), R13
grad_pos:
	TESTQ R12, R12
	JZ grad_done
	XORQ BX, BX
grad_ch:
	VCVTPS2PD (SI)(BX*4), Z0
	VMULPD (R8)(BX*8), Z0, Z0
	VSUBPD (R9)(BX*8), Z0, Z0
	VCVTPS2PD (DI)(BX*4), Z1
	VMULPD (R10)(BX*8), Z1, Z1
	VSUBPD Z1, Z0, Z0
	VMULPD (R11)(BX*8), Z0, Z0
	VCVTPD2PS Z0, Y0
	VMOVUPS Y0, (DX)(BX*4)
	ADDQ $8, BX
	CMPQ BX, R13
	JLT grad_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP grad_pos
grad_done:
	VZEROUPPER
	RET

// func gnSumsMasked32AVX512(a, b, y *float32, sa, sab *float64, p, c int)
// gnSums32AVX512 of a where y > 0, else 0 (the gradient through a ReLU fused after a
// GroupNorm whose output is y).
TEXT ·gnSumsMasked32AVX512(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ y+16(FP), R10
	MOVQ sa+24(FP), R8
	MOVQ sab+32(FP), R9
	MOVQ p+40(FP), R12
	MOVQ c+48(FP), R13
	MOVQ R13, R14
	SHLQ $2, R14
	VXORPS Y15, Y15, Y15
	XORQ BX, BX
msums_block:
	CMPQ BX, R13
	JGE msums_done
	LEAQ (SI)(BX*4), AX
	LEAQ (DI)(BX*4), DX
	LEAQ (R10)(BX*4), R11
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	MOVQ R12, CX
msums_pair:
	CMPQ CX, $2
	JLT msums_tail
	VMOVUPS (R11), Y8
	VCMPPS $0x1e, Y15, Y8, K1
	VMOVUPS.Z (AX), K1, Y9
	VCVTPS2PD Y9, Z4
	VCVTPS2PD (DX), Z5
	VADDPD Z4, Z0, Z0
	VFMADD231PD Z5, Z4, Z1
	VMOVUPS (R11)(R14*1), Y10
	VCMPPS $0x1e, Y15, Y10, K2
	VMOVUPS.Z (AX)(R14*1), K2, Y11
	VCVTPS2PD Y11, Z6
	VCVTPS2PD (DX)(R14*1), Z7
	VADDPD Z6, Z2, Z2
	VFMADD231PD Z7, Z6, Z3
	LEAQ (AX)(R14*2), AX
	LEAQ (DX)(R14*2), DX
	LEAQ (R11)(R14*2), R11
	SUBQ $2, CX
	JMP msums_pair
msums_tail:
	TESTQ CX, CX
	JZ msums_store
	VMOVUPS (R11), Y8
	VCMPPS $0x1e, Y15, Y8, K1
	VMOVUPS.Z (AX), K1, Y9
	VCVTPS2PD Y9, Z4
	VCVTPS2PD (DX), Z5
	VADDPD Z4, Z0, Z0
	VFMADD231PD Z5, Z4, Z1
msums_store:
	VADDPD Z2, Z0, Z0
	VADDPD Z3, Z1, Z1
	VMOVUPD Z0, (R8)(BX*8)
	VMOVUPD Z1, (R9)(BX*8)
	ADDQ $8, BX
	JMP msums_block
msums_done:
	VZEROUPPER
	RET

// func gnNormReLU32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
// gnNorm32AVX512 with y = max(0, γ·xh + β) (VMAXPS(0, v): v unless 0 > v, so NaN passes).
TEXT ·gnNormReLU32AVX512(SB), NOSPLIT, $0-72
	MOVQ x+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ y+16(FP), DX
	MOVQ mean+24(FP), R8
	MOVQ r+32(FP), R9
	MOVQ gamma+40(FP), R10
	MOVQ beta+48(FP), R11
	MOVQ p+56(FP), R12
	MOVQ c+64(FP), R13
	VXORPS Y15, Y15, Y15
rnorm_pos:
	TESTQ R12, R12
	JZ rnorm_done
	XORQ BX, BX
rnorm_ch:
	VCVTPS2PD (SI)(BX*4), Z0
	VSUBPD (R8)(BX*8), Z0, Z0
	VMULPD (R9)(BX*8), Z0, Z0
	VCVTPD2PS Z0, Y0
	VMOVUPS Y0, (DI)(BX*4)
	VMULPS (R10)(BX*4), Y0, Y1
	VADDPS (R11)(BX*4), Y1, Y1
	VMAXPS Y1, Y15, Y1
	VMOVUPS Y1, (DX)(BX*4)
	ADDQ $8, BX
	CMPQ BX, R13
	JLT rnorm_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP rnorm_pos
rnorm_done:
	VZEROUPPER
	RET

// func gnGradMasked32AVX512(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int)
// gnGrad32AVX512 with dy taken as 0 where y ≤ 0 (or NaN).
TEXT ·gnGradMasked32AVX512(SB), NOSPLIT, $0-80
	MOVQ dy+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ y+16(FP), R14
	MOVQ dx+24(FP), DX
	MOVQ gain+32(FP), R8
	MOVQ mg+40(FP), R9
	MOVQ mgx+48(FP), R10
	MOVQ r+56(FP), R11
	MOVQ p+64(FP), R12
	MOVQ c+72(FP), R13
	VXORPS Y15, Y15, Y15
mgrad_pos:
	TESTQ R12, R12
	JZ mgrad_done
	XORQ BX, BX
mgrad_ch:
	VMOVUPS (R14)(BX*4), Y8
	VCMPPS $0x1e, Y15, Y8, K1
	VMOVUPS.Z (SI)(BX*4), K1, Y9
	VCVTPS2PD Y9, Z0
	VMULPD (R8)(BX*8), Z0, Z0
	VSUBPD (R9)(BX*8), Z0, Z0
	VCVTPS2PD (DI)(BX*4), Z1
	VMULPD (R10)(BX*8), Z1, Z1
	VSUBPD Z1, Z0, Z0
	VMULPD (R11)(BX*8), Z0, Z0
	VCVTPD2PS Z0, Y0
	VMOVUPS Y0, (DX)(BX*4)
	ADDQ $8, BX
	CMPQ BX, R13
	JLT mgrad_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (R14)(R13*4), R14
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP mgrad_pos
mgrad_done:
	VZEROUPPER
	RET

// AVX2 + FMA versions: the same arithmetic in the same order as the AVX-512 kernels and the
// Go loops (each channel's sums and values are independent lanes), on 4 float64 lanes per
// YMM register: 8 channels per block as two halves of 4.

// func gnSums32AVX2(a, b *float32, sa, sab *float64, p, c int)
TEXT ·gnSums32AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ sa+16(FP), R8
	MOVQ sab+24(FP), R9
	MOVQ p+32(FP), R12
	MOVQ c+40(FP), R13
	MOVQ R13, R14
	SHLQ $2, R14 // row stride in bytes
	XORQ BX, BX  // channel
sums2_block:
	CMPQ BX, R13
	JGE sums2_done
	LEAQ (SI)(BX*4), AX
	LEAQ (DI)(BX*4), DX
	VXORPD Y0, Y0, Y0 // Σa even, channels 0–3 of the block
	VXORPD Y1, Y1, Y1 // Σa even, 4–7
	VXORPD Y2, Y2, Y2 // Σab even, 0–3
	VXORPD Y3, Y3, Y3 // Σab even, 4–7
	VXORPD Y4, Y4, Y4 // odd positions, the same four
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ R12, CX
sums2_pair:
	CMPQ CX, $2
	JLT sums2_tail
	VCVTPS2PD (AX), Y8
	VCVTPS2PD 16(AX), Y9
	VCVTPS2PD (DX), Y10
	VCVTPS2PD 16(DX), Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VFMADD231PD Y10, Y8, Y2
	VFMADD231PD Y11, Y9, Y3
	VCVTPS2PD (AX)(R14*1), Y12
	VCVTPS2PD 16(AX)(R14*1), Y13
	VCVTPS2PD (DX)(R14*1), Y10
	VCVTPS2PD 16(DX)(R14*1), Y11
	VADDPD Y12, Y4, Y4
	VADDPD Y13, Y5, Y5
	VFMADD231PD Y10, Y12, Y6
	VFMADD231PD Y11, Y13, Y7
	LEAQ (AX)(R14*2), AX
	LEAQ (DX)(R14*2), DX
	SUBQ $2, CX
	JMP sums2_pair
sums2_tail:
	TESTQ CX, CX
	JZ sums2_store
	VCVTPS2PD (AX), Y8
	VCVTPS2PD 16(AX), Y9
	VCVTPS2PD (DX), Y10
	VCVTPS2PD 16(DX), Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VFMADD231PD Y10, Y8, Y2
	VFMADD231PD Y11, Y9, Y3
sums2_store:
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	VMOVUPD Y0, (R8)(BX*8)
	VMOVUPD Y1, 32(R8)(BX*8)
	VMOVUPD Y2, (R9)(BX*8)
	VMOVUPD Y3, 32(R9)(BX*8)
	ADDQ $8, BX
	JMP sums2_block
sums2_done:
	VZEROUPPER
	RET

// func gnSumsMasked32AVX2(a, b, y *float32, sa, sab *float64, p, c int)
// gnSums32AVX2 of a where y > 0, else +0.
TEXT ·gnSumsMasked32AVX2(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ y+16(FP), R10
	MOVQ sa+24(FP), R8
	MOVQ sab+32(FP), R9
	MOVQ p+40(FP), R12
	MOVQ c+48(FP), R13
	MOVQ R13, R14
	SHLQ $2, R14
	VXORPS X15, X15, X15
	XORQ BX, BX
msums2_block:
	CMPQ BX, R13
	JGE msums2_done
	LEAQ (SI)(BX*4), AX
	LEAQ (DI)(BX*4), DX
	LEAQ (R10)(BX*4), R11
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ R12, CX
msums2_pos:
	TESTQ CX, CX
	JZ msums2_store
	VMOVUPS (R11), X8
	VCMPPS $0x1e, X15, X8, X8 // y > 0
	VANDPS (AX), X8, X8
	VMOVUPS 16(R11), X9
	VCMPPS $0x1e, X15, X9, X9
	VANDPS 16(AX), X9, X9
	VCVTPS2PD X8, Y8
	VCVTPS2PD X9, Y9
	VCVTPS2PD (DX), Y10
	VCVTPS2PD 16(DX), Y11
	VADDPD Y8, Y0, Y0
	VADDPD Y9, Y1, Y1
	VFMADD231PD Y10, Y8, Y2
	VFMADD231PD Y11, Y9, Y3
	DECQ CX
	JZ msums2_store
	VMOVUPS (R11)(R14*1), X12
	VCMPPS $0x1e, X15, X12, X12
	VANDPS (AX)(R14*1), X12, X12
	VMOVUPS 16(R11)(R14*1), X13
	VCMPPS $0x1e, X15, X13, X13
	VANDPS 16(AX)(R14*1), X13, X13
	VCVTPS2PD X12, Y12
	VCVTPS2PD X13, Y13
	VCVTPS2PD (DX)(R14*1), Y10
	VCVTPS2PD 16(DX)(R14*1), Y11
	VADDPD Y12, Y4, Y4
	VADDPD Y13, Y5, Y5
	VFMADD231PD Y10, Y12, Y6
	VFMADD231PD Y11, Y13, Y7
	LEAQ (AX)(R14*2), AX
	LEAQ (DX)(R14*2), DX
	LEAQ (R11)(R14*2), R11
	DECQ CX
	JMP msums2_pos
msums2_store:
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	VMOVUPD Y0, (R8)(BX*8)
	VMOVUPD Y1, 32(R8)(BX*8)
	VMOVUPD Y2, (R9)(BX*8)
	VMOVUPD Y3, 32(R9)(BX*8)
	ADDQ $8, BX
	JMP msums2_block
msums2_done:
	VZEROUPPER
	RET

// func gnNorm32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
// xh = float32((x − mean)·r), y = γ·xh + β (float32 multiply, then add): 4 channels a step.
TEXT ·gnNorm32AVX2(SB), NOSPLIT, $0-72
	MOVQ x+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ y+16(FP), DX
	MOVQ mean+24(FP), R8
	MOVQ r+32(FP), R9
	MOVQ gamma+40(FP), R10
	MOVQ beta+48(FP), R11
	MOVQ p+56(FP), R12
	MOVQ c+64(FP), R13
norm2_pos:
	TESTQ R12, R12
	JZ norm2_done
	XORQ BX, BX
norm2_ch:
	VCVTPS2PD (SI)(BX*4), Y0
	VSUBPD (R8)(BX*8), Y0, Y0
	VMULPD (R9)(BX*8), Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DI)(BX*4)
	VMULPS (R10)(BX*4), X0, X1
	VADDPS (R11)(BX*4), X1, X1
	VMOVUPS X1, (DX)(BX*4)
	ADDQ $4, BX
	CMPQ BX, R13
	JLT norm2_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP norm2_pos
norm2_done:
	VZEROUPPER
	RET

// func gnNormReLU32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
// gnNorm32AVX2 with y = max(0, γ·xh + β) (VMAXPS(0, v): NaN passes).
TEXT ·gnNormReLU32AVX2(SB), NOSPLIT, $0-72
	MOVQ x+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ y+16(FP), DX
	MOVQ mean+24(FP), R8
	MOVQ r+32(FP), R9
	MOVQ gamma+40(FP), R10
	MOVQ beta+48(FP), R11
	MOVQ p+56(FP), R12
	MOVQ c+64(FP), R13
	VXORPS X15, X15, X15
rnorm2_pos:
	TESTQ R12, R12
	JZ rnorm2_done
	XORQ BX, BX
rnorm2_ch:
	VCVTPS2PD (SI)(BX*4), Y0
	VSUBPD (R8)(BX*8), Y0, Y0
	VMULPD (R9)(BX*8), Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DI)(BX*4)
	VMULPS (R10)(BX*4), X0, X1
	VADDPS (R11)(BX*4), X1, X1
	VMAXPS X1, X15, X1
	VMOVUPS X1, (DX)(BX*4)
	ADDQ $4, BX
	CMPQ BX, R13
	JLT rnorm2_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP rnorm2_pos
rnorm2_done:
	VZEROUPPER
	RET

// func gnGrad32AVX2(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int)
// dx = float32(((dy·g − mg) − xh·mgx)·r), each step a float64 operation (no FMA).
TEXT ·gnGrad32AVX2(SB), NOSPLIT, $0-72
	MOVQ dy+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ dx+16(FP), DX
	MOVQ gain+24(FP), R8
	MOVQ mg+32(FP), R9
	MOVQ mgx+40(FP), R10
	MOVQ r+48(FP), R11
	MOVQ p+56(FP), R12
	MOVQ c+64(FP), R13
grad2_pos:
	TESTQ R12, R12
	JZ grad2_done
	XORQ BX, BX
grad2_ch:
	VCVTPS2PD (SI)(BX*4), Y0
	VMULPD (R8)(BX*8), Y0, Y0
	VSUBPD (R9)(BX*8), Y0, Y0
	VCVTPS2PD (DI)(BX*4), Y1
	VMULPD (R10)(BX*8), Y1, Y1
	VSUBPD Y1, Y0, Y0
	VMULPD (R11)(BX*8), Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DX)(BX*4)
	ADDQ $4, BX
	CMPQ BX, R13
	JLT grad2_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP grad2_pos
grad2_done:
	VZEROUPPER
	RET

// func gnGradMasked32AVX2(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int)
// gnGrad32AVX2 with dy taken as +0 where y ≤ 0 (or NaN).
TEXT ·gnGradMasked32AVX2(SB), NOSPLIT, $0-80
	MOVQ dy+0(FP), SI
	MOVQ xh+8(FP), DI
	MOVQ y+16(FP), R14
	MOVQ dx+24(FP), DX
	MOVQ gain+32(FP), R8
	MOVQ mg+40(FP), R9
	MOVQ mgx+48(FP), R10
	MOVQ r+56(FP), R11
	MOVQ p+64(FP), R12
	MOVQ c+72(FP), R13
	VXORPS X15, X15, X15
mgrad2_pos:
	TESTQ R12, R12
	JZ mgrad2_done
	XORQ BX, BX
mgrad2_ch:
	VMOVUPS (R14)(BX*4), X8
	VCMPPS $0x1e, X15, X8, X8
	VANDPS (SI)(BX*4), X8, X8
	VCVTPS2PD X8, Y0
	VMULPD (R8)(BX*8), Y0, Y0
	VSUBPD (R9)(BX*8), Y0, Y0
	VCVTPS2PD (DI)(BX*4), Y1
	VMULPD (R10)(BX*8), Y1, Y1
	VSUBPD Y1, Y0, Y0
	VMULPD (R11)(BX*8), Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DX)(BX*4)
	ADDQ $4, BX
	CMPQ BX, R13
	JLT mgrad2_ch
	LEAQ (SI)(R13*4), SI
	LEAQ (DI)(R13*4), DI
	LEAQ (R14)(R13*4), R14
	LEAQ (DX)(R13*4), DX
	DECQ R12
	JMP mgrad2_pos
mgrad2_done:
	VZEROUPPER
	RET
