#include "textflag.h"

// GroupNorm's per-image loops in float32 with AVX-512 and with AVX2 + FMA (groupnorm_kernels.go
// has their Go versions, the same arithmetic in the same order): an image is p positions × c
// channels, channel innermost, c a multiple of 8 (8 channels per step, widened to float64
// lanes). Each kernel is written once below as macros over the registers of a vector width:
// AVX-512 holds 8 float64 lanes in a Z register (their float32 in a Y register), AVX2 4 in a Y
// register (their float32 in an X register), so its sums take a block of 8 channels as two
// halves of 4 and its other loops step 4 channels. Each channel's sums and values are
// independent lanes, so both widths compute the same numbers.

// The arguments, in the registers the loops below use.
#define SUMS_ARGS \
	MOVQ a+0(FP), SI; \
	MOVQ b+8(FP), DI; \
	MOVQ sa+16(FP), R8; \
	MOVQ sab+24(FP), R9; \
	MOVQ p+32(FP), R12; \
	MOVQ c+40(FP), R13; \
	MOVQ R13, R14; \
	SHLQ $2, R14 // row stride in bytes

#define MSUMS_ARGS \
	MOVQ a+0(FP), SI; \
	MOVQ b+8(FP), DI; \
	MOVQ y+16(FP), R10; \
	MOVQ sa+24(FP), R8; \
	MOVQ sab+32(FP), R9; \
	MOVQ p+40(FP), R12; \
	MOVQ c+48(FP), R13; \
	MOVQ R13, R14; \
	SHLQ $2, R14

// ARGS9(r0, r1, r2, v0, v1, v2, v3) loads the arguments of the norm and grad kernels, named
// at each use: three rows of float32 in SI, DI, DX, four per-channel vectors in R8–R11, then
// p and c.
#define ARGS9(r0, r1, r2, v0, v1, v2, v3) \
	MOVQ r0+0(FP), SI; \
	MOVQ r1+8(FP), DI; \
	MOVQ r2+16(FP), DX; \
	MOVQ v0+24(FP), R8; \
	MOVQ v1+32(FP), R9; \
	MOVQ v2+40(FP), R10; \
	MOVQ v3+48(FP), R11; \
	MOVQ p+56(FP), R12; \
	MOVQ c+64(FP), R13

#define MGRAD_ARGS \
	MOVQ dy+0(FP), SI; \
	MOVQ xh+8(FP), DI; \
	MOVQ y+16(FP), R14; \
	MOVQ dx+24(FP), DX; \
	MOVQ gain+32(FP), R8; \
	MOVQ mg+40(FP), R9; \
	MOVQ mgx+48(FP), R10; \
	MOVQ r+56(FP), R11; \
	MOVQ p+64(FP), R12; \
	MOVQ c+72(FP), R13

// SUMS(rows, zero, even, odd, next, store): the loop of the sums kernels. Per block of 8
// channels (BX), rows points AX, DX (and R11, masked) at the block's first position; zero
// clears the accumulators; even and odd positions are added into separate ones (even adds
// the position at AX, odd the one a row (R14) further), next moves on two rows; store adds
// the odd accumulators to the even ones and writes them to sa and sab.
#define SUMS(rows, zero, even, odd, next, store) \
	XORQ BX, BX; \
block: \
	CMPQ BX, R13; \
	JGE done; \
	rows; \
	zero; \
	MOVQ R12, CX; \
pair: \
	CMPQ CX, $2; \
	JLT tail; \
	even; \
	odd; \
	next; \
	SUBQ $2, CX; \
	JMP pair; \
tail: \
	TESTQ CX, CX; \
	JZ sum; \
	even; \
sum: \
	store; \
	ADDQ $8, BX; \
	JMP block; \
done: \
	VZEROUPPER; \
	RET

#define ROWS2 LEAQ (SI)(BX*4), AX; LEAQ (DI)(BX*4), DX
#define ROWS3 ROWS2; LEAQ (R10)(BX*4), R11
#define NEXT2 LEAQ (AX)(R14*2), AX; LEAQ (DX)(R14*2), DX
#define NEXT3 NEXT2; LEAQ (R11)(R14*2), R11

// ACC512(a, b, A, B, SA, SAB): SA += a, SAB += a·b for 8 channels of one position, a and b
// widened to float64 in A and B.
#define ACC512(a, b, A, B, SA, SAB) \
	VCVTPS2PD a, A; \
	VCVTPS2PD b, B; \
	VADDPD A, SA, SA; \
	VFMADD231PD B, A, SAB

// MASK512(y, a, M, K, V): V = a where y > 0, else 0 (M and K scratch; Y15 holds zeros).
#define MASK512(y, a, M, K, V) \
	VMOVUPS y, M; \
	VCMPPS $0x1e, Y15, M, K; \
	VMOVUPS.Z a, K, V

// Σa even, Σab even, Σa odd, Σab odd.
#define ZERO512 VPXORQ Z0, Z0, Z0; VPXORQ Z1, Z1, Z1; VPXORQ Z2, Z2, Z2; VPXORQ Z3, Z3, Z3
#define EVEN512 ACC512((AX), (DX), Z4, Z5, Z0, Z1)
#define ODD512 ACC512((AX)(R14*1), (DX)(R14*1), Z6, Z7, Z2, Z3)
#define MEVEN512 MASK512((R11), (AX), Y8, K1, Y9); ACC512(Y9, (DX), Z4, Z5, Z0, Z1)
#define MODD512 MASK512((R11)(R14*1), (AX)(R14*1), Y10, K2, Y11); ACC512(Y11, (DX)(R14*1), Z6, Z7, Z2, Z3)
#define STORE512 \
	VADDPD Z2, Z0, Z0; \
	VADDPD Z3, Z1, Z1; \
	VMOVUPD Z0, (R8)(BX*8); \
	VMOVUPD Z1, (R9)(BX*8)

// ACC2(alo, ahi, b, A0, A1, SA0, SA1, SAB0, SAB1): ACC512 on two halves of 4 channels, the
// two halves of a in alo and ahi (widened in A0, A1), b's at b and 16 bytes on.
#define ACC2(alo, ahi, b, A0, A1, SA0, SA1, SAB0, SAB1) \
	VCVTPS2PD alo, A0; \
	VCVTPS2PD ahi, A1; \
	VCVTPS2PD b, Y10; \
	VCVTPS2PD 16 b, Y11; \
	VADDPD A0, SA0, SA0; \
	VADDPD A1, SA1, SA1; \
	VFMADD231PD Y10, A0, SAB0; \
	VFMADD231PD Y11, A1, SAB1

// MASK2(y, a, X): X = a where y > 0, else +0, for 4 channels (X15 holds zeros).
#define MASK2(y, a, X) \
	VMOVUPS y, X; \
	VCMPPS $0x1e, X15, X, X; \
	VANDPS a, X, X

// Σa even for channels 0–3 and 4–7 of the block, Σab even for the same, then odd positions,
// the same four.
#define ZERO2 \
	VXORPD Y0, Y0, Y0; \
	VXORPD Y1, Y1, Y1; \
	VXORPD Y2, Y2, Y2; \
	VXORPD Y3, Y3, Y3; \
	VXORPD Y4, Y4, Y4; \
	VXORPD Y5, Y5, Y5; \
	VXORPD Y6, Y6, Y6; \
	VXORPD Y7, Y7, Y7
#define EVEN2 ACC2((AX), 16(AX), (DX), Y8, Y9, Y0, Y1, Y2, Y3)
#define ODD2 ACC2((AX)(R14*1), 16(AX)(R14*1), (DX)(R14*1), Y12, Y13, Y4, Y5, Y6, Y7)
#define MEVEN2 \
	MASK2((R11), (AX), X8); \
	MASK2(16(R11), 16(AX), X9); \
	ACC2(X8, X9, (DX), Y8, Y9, Y0, Y1, Y2, Y3)
#define MODD2 \
	MASK2((R11)(R14*1), (AX)(R14*1), X12); \
	MASK2(16(R11)(R14*1), 16(AX)(R14*1), X13); \
	ACC2(X12, X13, (DX)(R14*1), Y12, Y13, Y4, Y5, Y6, Y7)
#define STORE2 \
	VADDPD Y4, Y0, Y0; \
	VADDPD Y5, Y1, Y1; \
	VADDPD Y6, Y2, Y2; \
	VADDPD Y7, Y3, Y3; \
	VMOVUPD Y0, (R8)(BX*8); \
	VMOVUPD Y1, 32(R8)(BX*8); \
	VMOVUPD Y2, (R9)(BX*8); \
	VMOVUPD Y3, 32(R9)(BX*8)

// POSITIONS(step, channels, next): the loop of the other kernels. For each of the p (R12)
// positions, channels for BX = 0, step, … < c (R13), then next moves the row pointers on by
// a row of c float32.
#define POSITIONS(step, channels, next) \
pos: \
	TESTQ R12, R12; \
	JZ done; \
	XORQ BX, BX; \
ch: \
	channels; \
	ADDQ $step, BX; \
	CMPQ BX, R13; \
	JLT ch; \
	next; \
	DECQ R12; \
	JMP pos; \
done: \
	VZEROUPPER; \
	RET

#define ROW3 LEAQ (SI)(R13*4), SI; LEAQ (DI)(R13*4), DI; LEAQ (DX)(R13*4), DX
#define ROW4 LEAQ (SI)(R13*4), SI; LEAQ (DI)(R13*4), DI; LEAQ (R14)(R13*4), R14; LEAQ (DX)(R13*4), DX

// NORM(W, N, T, CVT): for the channels at BX, xh = float32((x − mean)·r) in N, written, and
// γ·xh + β (float32 multiply, then add) in T; W a float64 register, CVT its narrowing.
#define NORM(W, N, T, CVT) \
	VCVTPS2PD (SI)(BX*4), W; \
	VSUBPD (R8)(BX*8), W, W; \
	VMULPD (R9)(BX*8), W, W; \
	CVT W, N; \
	VMOVUPS N, (DI)(BX*4); \
	VMULPS (R10)(BX*4), N, T; \
	VADDPS (R11)(BX*4), T, T

// GRAD(W0, W1, N, CVT): for the channels at BX, with dy widened in W0, dx = float32(((dy·g −
// mg) − xh·mgx)·r), each step a float64 operation (no FMA); N receives dx.
#define GRAD(W0, W1, N, CVT) \
	VMULPD (R8)(BX*8), W0, W0; \
	VSUBPD (R9)(BX*8), W0, W0; \
	VCVTPS2PD (DI)(BX*4), W1; \
	VMULPD (R10)(BX*8), W1, W1; \
	VSUBPD W1, W0, W0; \
	VMULPD (R11)(BX*8), W0, W0; \
	CVT W0, N; \
	VMOVUPS N, (DX)(BX*4)

#define NORM512 NORM(Z0, Y0, Y1, VCVTPD2PS); VMOVUPS Y1, (DX)(BX*4)
#define NORMRELU512 NORM(Z0, Y0, Y1, VCVTPD2PS); VMAXPS Y1, Y15, Y1; VMOVUPS Y1, (DX)(BX*4)
#define GRAD512 VCVTPS2PD (SI)(BX*4), Z0; GRAD(Z0, Z1, Y0, VCVTPD2PS)
#define MGRAD512 MASK512((R14)(BX*4), (SI)(BX*4), Y8, K1, Y9); VCVTPS2PD Y9, Z0; GRAD(Z0, Z1, Y0, VCVTPD2PS)
#define NORM2 NORM(Y0, X0, X1, VCVTPD2PSY); VMOVUPS X1, (DX)(BX*4)
#define NORMRELU2 NORM(Y0, X0, X1, VCVTPD2PSY); VMAXPS X1, X15, X1; VMOVUPS X1, (DX)(BX*4)
#define GRAD2 VCVTPS2PD (SI)(BX*4), Y0; GRAD(Y0, Y1, X0, VCVTPD2PSY)
#define MGRAD2 MASK2((R14)(BX*4), (SI)(BX*4), X8); VCVTPS2PD X8, Y0; GRAD(Y0, Y1, X0, VCVTPD2PSY)

// func gnSums32AVX512(a, b *float32, sa, sab *float64, p, c int)
// sa[j] = Σ_q a[q,j], sab[j] = Σ_q a[q,j]·b[q,j]: per block of 8 channels, even and odd
// positions in separate accumulators, added at the end.
TEXT ·gnSums32AVX512(SB), NOSPLIT, $0-48
	SUMS_ARGS
	SUMS(ROWS2, ZERO512, EVEN512, ODD512, NEXT2, STORE512)

// func gnNorm32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
// xh = float32((x − mean)·r), y = γ·xh + β (float32 multiply, then add).
TEXT ·gnNorm32AVX512(SB), NOSPLIT, $0-72
	ARGS9(x, xh, y, mean, r, gamma, beta)
	POSITIONS(8, NORM512, ROW3)

// func gnGrad32AVX512(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int)
// dx = float32(((dy·g − mg) − xh·mgx)·r), each step a float64 operation (no FMA).
TEXT ·gnGrad32AVX512(SB), NOSPLIT, $0-72
	ARGS9(dy, xh, dx, gain, mg, mgx, r)
	POSITIONS(8, GRAD512, ROW3)

// func gnSumsMasked32AVX512(a, b, y *float32, sa, sab *float64, p, c int)
// gnSums32AVX512 of a where y > 0, else 0 (the gradient through a ReLU fused after a
// GroupNorm whose output is y).
TEXT ·gnSumsMasked32AVX512(SB), NOSPLIT, $0-56
	MSUMS_ARGS
	VXORPS Y15, Y15, Y15
	SUMS(ROWS3, ZERO512, MEVEN512, MODD512, NEXT3, STORE512)

// func gnNormReLU32AVX512(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
// gnNorm32AVX512 with y = max(0, γ·xh + β) (VMAXPS(0, v): v unless 0 > v, so NaN passes).
TEXT ·gnNormReLU32AVX512(SB), NOSPLIT, $0-72
	ARGS9(x, xh, y, mean, r, gamma, beta)
	VXORPS Y15, Y15, Y15
	POSITIONS(8, NORMRELU512, ROW3)

// func gnGradMasked32AVX512(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int)
// gnGrad32AVX512 with dy taken as 0 where y ≤ 0 (or NaN).
TEXT ·gnGradMasked32AVX512(SB), NOSPLIT, $0-80
	MGRAD_ARGS
	VXORPS Y15, Y15, Y15
	POSITIONS(8, MGRAD512, ROW4)

// func gnSums32AVX2(a, b *float32, sa, sab *float64, p, c int)
TEXT ·gnSums32AVX2(SB), NOSPLIT, $0-48
	SUMS_ARGS
	SUMS(ROWS2, ZERO2, EVEN2, ODD2, NEXT2, STORE2)

// func gnSumsMasked32AVX2(a, b, y *float32, sa, sab *float64, p, c int)
// gnSums32AVX2 of a where y > 0, else +0.
TEXT ·gnSumsMasked32AVX2(SB), NOSPLIT, $0-56
	MSUMS_ARGS
	VXORPS X15, X15, X15
	SUMS(ROWS3, ZERO2, MEVEN2, MODD2, NEXT3, STORE2)

// func gnNorm32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
TEXT ·gnNorm32AVX2(SB), NOSPLIT, $0-72
	ARGS9(x, xh, y, mean, r, gamma, beta)
	POSITIONS(4, NORM2, ROW3)

// func gnNormReLU32AVX2(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
TEXT ·gnNormReLU32AVX2(SB), NOSPLIT, $0-72
	ARGS9(x, xh, y, mean, r, gamma, beta)
	VXORPS X15, X15, X15
	POSITIONS(4, NORMRELU2, ROW3)

// func gnGrad32AVX2(dy, xh, dx *float32, gain, mg, mgx, r *float64, p, c int)
TEXT ·gnGrad32AVX2(SB), NOSPLIT, $0-72
	ARGS9(dy, xh, dx, gain, mg, mgx, r)
	POSITIONS(4, GRAD2, ROW3)

// func gnGradMasked32AVX2(dy, xh, y, dx *float32, gain, mg, mgx, r *float64, p, c int)
// gnGrad32AVX2 with dy taken as +0 where y ≤ 0 (or NaN).
TEXT ·gnGradMasked32AVX2(SB), NOSPLIT, $0-80
	MGRAD_ARGS
	VXORPS X15, X15, X15
	POSITIONS(4, MGRAD2, ROW4)
