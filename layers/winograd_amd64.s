#include "textflag.h"

// The F(2×2, 3×3) weight gradient's transforms (winograd_grad.go) in 8 lanes of AVX2, the
// same additions, subtractions and halvings, in the same order, as their Go versions
// (winoIn2Go, winoOut2Go), so they agree bit for bit; n is a multiple of 8 (Go does the
// rest). Used on the AVX-512 path too, which therefore trains as the AVX2 one.

// func winoIn2AVX2(x, v *float32, rs, cs, plane, n int)
// d[i][j] = x[i·rs + j·cs + ch]; v[4r + s][ch] = (Bᵀ·d·B)[r][s]: row r of Bᵀ·d is
// d0 − d2, d1 + d2, d2 − d1, d1 − d3 (column by column), then the same on that row.
TEXT ·winoIn2AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ rs+16(FP), R8
	SHLQ $2, R8
	MOVQ cs+24(FP), R9
	SHLQ $2, R9
	MOVQ plane+32(FP), R10
	SHLQ $2, R10
	MOVQ n+40(FP), CX
	SHRQ $3, CX
	JZ done
	LEAQ (R9)(R9*2), R14       // 3·cs
	LEAQ (R10)(R10*2), BX      // 3·plane
	MOVQ R10, DX
	SHLQ $2, DX                // 4·plane
	LEAQ (SI)(R8*1), R11       // row 1
	LEAQ (SI)(R8*2), R12       // row 2
	LEAQ (R11)(R8*2), R13      // row 3

#define LOADROW(P, A, B, C, D) \
	VMOVUPS (P), A; \
	VMOVUPS (P)(R9*1), B; \
	VMOVUPS (P)(R9*2), C; \
	VMOVUPS (P)(R14*1), D

// ROWOUT: v[4r + s] for the row t0…t3 in Y0–Y3 (r's planes from AX), then AX to r + 1.
#define ROWOUT \
	VSUBPS Y2, Y0, Y8; \
	VADDPS Y2, Y1, Y9; \
	VSUBPS Y1, Y2, Y10; \
	VSUBPS Y3, Y1, Y11; \
	VMOVUPS Y8, (AX); \
	VMOVUPS Y9, (AX)(R10*1); \
	VMOVUPS Y10, (AX)(R10*2); \
	VMOVUPS Y11, (AX)(BX*1); \
	ADDQ DX, AX

// ROWIN(OP, P, Q): row r of Bᵀ·d, the rows at P and Q combined by OP (Q's from P's), then
// ROWOUT.
#define ROWIN(OP, P, Q) \
	LOADROW(P, Y0, Y1, Y2, Y3); \
	LOADROW(Q, Y4, Y5, Y6, Y7); \
	OP Y4, Y0, Y0; \
	OP Y5, Y1, Y1; \
	OP Y6, Y2, Y2; \
	OP Y7, Y3, Y3; \
	ROWOUT

loop:
	MOVQ DI, AX
	ROWIN(VSUBPS, SI, R12)  // r = 0: d0 − d2
	ROWIN(VADDPS, R11, R12) // r = 1: d1 + d2
	ROWIN(VSUBPS, R12, R11) // r = 2: d2 − d1
	ROWIN(VSUBPS, R11, R13) // r = 3: d1 − d3
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func winoOut2AVX2(m, out *float32, plane, gs, n int)
// M[r][s] = m[(4r + s)·plane + ch]; g[3a + b][ch·] at g + (3a + b)·gs = (Gᵀ·M·G)[a][b]:
// column s of Gᵀ·M is M0 + (M1 + M2)·½, (M1 − M2)·½, (M1 + M2)·½ + M3, then the same on
// each row of that.
TEXT ·winoOut2AVX2(SB), NOSPLIT, $0-40
	MOVQ m+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ plane+16(FP), R10
	SHLQ $2, R10
	MOVQ gs+24(FP), R8
	SHLQ $2, R8
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ odone
	MOVL $0x3f000000, AX       // ½
	VMOVD AX, X15
	VBROADCASTSS X15, Y15
	LEAQ (R10)(R10*2), R14     // 3·plane
	LEAQ (SI)(R10*4), R11      // row 1 (planes 4…7)
	LEAQ (R11)(R10*4), R12     // row 2
	LEAQ (R12)(R10*4), R13     // row 3
	LEAQ (R8)(R8*2), DX        // 3·gs

// COLUMN(OFF, W0, W1, W2): w[0..2][s] of column s, whose planes are OFF from each row's.
#define COLUMN(OFF, W0, W1, W2) \
	VMOVUPS OFF(R11), Y12; \
	VMOVUPS OFF(R12), Y13; \
	VADDPS Y13, Y12, Y14; \
	VSUBPS Y13, Y12, Y12; \
	VMULPS Y15, Y12, W1; \
	VMULPS Y15, Y14, Y14; \
	VMOVUPS OFF(SI), Y13; \
	VADDPS Y14, Y13, W0; \
	VMOVUPS OFF(R13), Y13; \
	VADDPS Y13, Y14, W2

// ROWG(W0, W1, W2, W3): g[3a + 0…2] from row a of w, at AX, AX + gs, AX + 2gs.
#define ROWG(W0, W1, W2, W3) \
	VADDPS W2, W1, Y12; \
	VSUBPS W2, W1, Y13; \
	VMULPS Y15, Y12, Y12; \
	VMULPS Y15, Y13, Y13; \
	VADDPS Y12, W0, Y14; \
	VMOVUPS Y14, (AX); \
	VMOVUPS Y13, (AX)(R8*1); \
	VADDPS W3, Y12, Y14; \
	VMOVUPS Y14, (AX)(R8*2); \
	ADDQ DX, AX

// NEXTPLANE: the four rows' pointers to the next column's planes.
#define NEXTPLANE \
	ADDQ R10, SI; \
	ADDQ R10, R11; \
	ADDQ R10, R12; \
	ADDQ R10, R13

oloop:
	// Column s = 0…3 at plane offsets 0, plane, 2·plane, 3·plane: w[a][s] in Y(4a + s).
	COLUMN(0, Y0, Y4, Y8)
	NEXTPLANE
	COLUMN(0, Y1, Y5, Y9)
	NEXTPLANE
	COLUMN(0, Y2, Y6, Y10)
	NEXTPLANE
	COLUMN(0, Y3, Y7, Y11)
	SUBQ R14, SI
	SUBQ R14, R11
	SUBQ R14, R12
	SUBQ R14, R13
	MOVQ DI, AX
	ROWG(Y0, Y1, Y2, Y3)
	ROWG(Y4, Y5, Y6, Y7)
	ROWG(Y8, Y9, Y10, Y11)
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, DI
	DECQ CX
	JNZ oloop
odone:
	VZEROUPPER
	RET
