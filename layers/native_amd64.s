#include "textflag.h"

// AVX-512 kernels of layers.Native's float32 ops (see native_amd64.go). Channel vectors of
// 16 lanes; the last vector of a row of c values is masked with K1.

DATA iota<>+0(SB)/4, $0
DATA iota<>+4(SB)/4, $1
DATA iota<>+8(SB)/4, $2
DATA iota<>+12(SB)/4, $3
DATA iota<>+16(SB)/4, $4
DATA iota<>+20(SB)/4, $5
DATA iota<>+24(SB)/4, $6
DATA iota<>+28(SB)/4, $7
DATA iota<>+32(SB)/4, $8
DATA iota<>+36(SB)/4, $9
DATA iota<>+40(SB)/4, $10
DATA iota<>+44(SB)/4, $11
DATA iota<>+48(SB)/4, $12
DATA iota<>+52(SB)/4, $13
DATA iota<>+56(SB)/4, $14
DATA iota<>+60(SB)/4, $15
GLOBL iota<>(SB), RODATA|NOPTR, $64

// func maxPoolForward32(x, y *float32, idx *int32, cells, start *int32, npix, c int)
// For each output pixel p: y[p·c + ch] = max over its window cells j (input offsets
// cells[start[p]…start[p+1]−1]) of x[cells[j] + ch], idx the winning input offset; the
// first maximum in window order wins (strictly greater replaces).
TEXT ·maxPoolForward32(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ idx+16(FP), DX
	MOVQ cells+24(FP), R8
	MOVQ start+32(FP), R9
	MOVQ npix+40(FP), R10
	MOVQ c+48(FP), R11
	VMOVDQU32 iota<>(SB), Z7
	XORQ R12, R12 // p
mpf_pixel:
	CMPQ R12, R10
	JGE mpf_done
	MOVLQSX (R9)(R12*4), R13   // a = start[p]
	MOVLQSX 4(R9)(R12*4), R14  // e = start[p+1]
	XORQ BX, BX                // channel offset v
mpf_vec:
	CMPQ BX, R11
	JGE mpf_nextpixel
	// K1 = lanes left in this row: min(16, c − v)
	MOVQ R11, CX
	SUBQ BX, CX
	MOVQ $16, AX
	CMPQ CX, AX
	CMOVQGT AX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	// First cell.
	MOVLQSX (R8)(R13*4), AX
	ADDQ BX, AX
	VMOVUPS.Z (SI)(AX*4), K1, Z0   // best
	VPBROADCASTD AX, Z1
	VPADDD Z7, Z1, Z1              // best index
	MOVQ R13, R15
	INCQ R15
mpf_cell:
	CMPQ R15, R14
	JGE mpf_store
	MOVLQSX (R8)(R15*4), AX
	ADDQ BX, AX
	VMOVUPS.Z (SI)(AX*4), K1, Z2
	VCMPPS $0x1e, Z0, Z2, K1, K2   // K2 = Z2 > Z0
	VMOVAPS Z2, K2, Z0
	VPBROADCASTD AX, Z3
	VPADDD Z7, Z3, Z3
	VMOVDQA32 Z3, K2, Z1
	INCQ R15
	JMP mpf_cell
mpf_store:
	MOVQ R12, AX
	IMULQ R11, AX
	ADDQ BX, AX
	VMOVUPS Z0, K1, (DI)(AX*4)
	VMOVDQU32 Z1, K1, (DX)(AX*4)
	ADDQ $16, BX
	JMP mpf_vec
mpf_nextpixel:
	INCQ R12
	JMP mpf_pixel
mpf_done:
	VZEROUPPER
	RET

// func maxPoolBackward32(dx, grad *float32, idx *int32, cells, start *int32, npix, c int)
// dx[idx[p·c+ch]] += g[p·c+ch], walking each window so that no lane scatters: for each cell
// j of pixel p, the lanes whose winner is cells[j]+ch add g there. dx must start at zero.
TEXT ·maxPoolBackward32(SB), NOSPLIT, $0-56
	MOVQ dx+0(FP), SI
	MOVQ grad+8(FP), DI
	MOVQ idx+16(FP), DX
	MOVQ cells+24(FP), R8
	MOVQ start+32(FP), R9
	MOVQ npix+40(FP), R10
	MOVQ c+48(FP), R11
	VMOVDQU32 iota<>(SB), Z7
	XORQ R12, R12
mpb_pixel:
	CMPQ R12, R10
	JGE mpb_done
	MOVLQSX (R9)(R12*4), R13
	MOVLQSX 4(R9)(R12*4), R14
	XORQ BX, BX
mpb_vec:
	CMPQ BX, R11
	JGE mpb_nextpixel
	MOVQ R11, CX
	SUBQ BX, CX
	MOVQ $16, AX
	CMPQ CX, AX
	CMOVQGT AX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	MOVQ R12, AX
	IMULQ R11, AX
	ADDQ BX, AX
	VMOVUPS.Z (DI)(AX*4), K1, Z0   // gradient
	VMOVDQU32.Z (DX)(AX*4), K1, Z1 // winners
	MOVQ R13, R15
mpb_cell:
	CMPQ R15, R14
	JGE mpb_nextvec
	MOVLQSX (R8)(R15*4), AX
	ADDQ BX, AX
	VPBROADCASTD AX, Z3
	VPADDD Z7, Z3, Z3
	VPCMPEQD Z3, Z1, K1, K2
	VMOVUPS.Z (SI)(AX*4), K2, Z4
	VADDPS Z0, Z4, Z4
	VMOVUPS Z4, K2, (SI)(AX*4)
	INCQ R15
	JMP mpb_cell
mpb_nextvec:
	ADDQ $16, BX
	JMP mpb_vec
mpb_nextpixel:
	INCQ R12
	JMP mpb_pixel
mpb_done:
	VZEROUPPER
	RET

// func patchCopy32(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)
// im2col of one image: for position p, zero row p of u ([npos × k]) when padded[p], then
// copy each run (src, dst, n) of runs[3·start[p]…]: u[p·k+dst…+n] = x[src…+n].
TEXT ·patchCopy32(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ u+8(FP), DX           // row p of u
	MOVQ runs+16(FP), R8
	MOVQ start+24(FP), R9
	MOVQ padded+32(FP), R10
	MOVQ npos+40(FP), R11
	MOVQ k+48(FP), R12
	SHLQ $2, R12               // row bytes
	VPXORD Z0, Z0, Z0
	XORQ R13, R13              // p
pc_pos:
	CMPQ R13, R11
	JGE pc_done
	MOVBQZX (R10)(R13*1), AX
	TESTQ AX, AX
	JZ pc_runs
	XORQ R14, R14              // zero the row, 64 bytes at a time
pc_zero:
	MOVQ R12, AX
	SUBQ R14, AX
	CMPQ AX, $64
	JL pc_zerotail
	VMOVUPS Z0, (DX)(R14*1)
	ADDQ $64, R14
	JMP pc_zero
pc_zerotail:
	TESTQ AX, AX
	JZ pc_runs
	MOVQ AX, CX
	SHRQ $2, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS Z0, K1, (DX)(R14*1)
pc_runs:
	MOVLQSX (R9)(R13*4), R14   // first run
	MOVLQSX 4(R9)(R13*4), R15  // end
pc_run:
	CMPQ R14, R15
	JGE pc_nextpos
	LEAQ (R14)(R14*2), AX
	MOVLQSX (R8)(AX*4), BX     // src
	MOVLQSX 4(R8)(AX*4), DI    // dst
	MOVLQSX 8(R8)(AX*4), AX    // n
	LEAQ (SI)(BX*4), BX
	LEAQ (DX)(DI*4), DI
pc_copy:
	CMPQ AX, $16
	JL pc_copytail
	VMOVUPS (BX), Z1
	VMOVUPS Z1, (DI)
	ADDQ $64, BX
	ADDQ $64, DI
	SUBQ $16, AX
	JMP pc_copy
pc_copytail:
	TESTQ AX, AX
	JZ pc_nextrun
	MOVQ AX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (BX), K1, Z1
	VMOVUPS Z1, K1, (DI)
pc_nextrun:
	INCQ R14
	JMP pc_run
pc_nextpos:
	ADDQ R12, DX
	INCQ R13
	JMP pc_pos
pc_done:
	VZEROUPPER
	RET

// func patchAdd32(dx, du *float32, runs *int32, start *int32, npos, k int)
// col2im of one image: dx[src…+n] += du[p·k+dst…+n] for every run of every position, in
// position and run order. dx must start at zero.
TEXT ·patchAdd32(SB), NOSPLIT, $0-48
	MOVQ dx+0(FP), SI
	MOVQ du+8(FP), DX          // row p of du
	MOVQ runs+16(FP), R8
	MOVQ start+24(FP), R9
	MOVQ npos+32(FP), R11
	MOVQ k+40(FP), R12
	SHLQ $2, R12
	XORQ R13, R13
pa_pos:
	CMPQ R13, R11
	JGE pa_done
	MOVLQSX (R9)(R13*4), R14
	MOVLQSX 4(R9)(R13*4), R15
pa_run:
	CMPQ R14, R15
	JGE pa_nextpos
	LEAQ (R14)(R14*2), AX
	MOVLQSX (R8)(AX*4), BX
	MOVLQSX 4(R8)(AX*4), DI
	MOVLQSX 8(R8)(AX*4), AX
	LEAQ (SI)(BX*4), BX        // into dx
	LEAQ (DX)(DI*4), DI        // from du
pa_add:
	CMPQ AX, $16
	JL pa_addtail
	VMOVUPS (DI), Z1
	VADDPS (BX), Z1, Z1
	VMOVUPS Z1, (BX)
	ADDQ $64, BX
	ADDQ $64, DI
	SUBQ $16, AX
	JMP pa_add
pa_addtail:
	TESTQ AX, AX
	JZ pa_nextrun
	MOVQ AX, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (DI), K1, Z1
	VMOVUPS.Z (BX), K1, Z2
	VADDPS Z1, Z2, Z2
	VMOVUPS Z2, K1, (BX)
pa_nextrun:
	INCQ R14
	JMP pa_run
pa_nextpos:
	ADDQ R12, DX
	INCQ R13
	JMP pa_pos
pa_done:
	VZEROUPPER
	RET

// func reluGrad32AVX(dz, grad, y *float32, n int)
// dz = g where y ≠ 0, else 0 (y are ReLU outputs, ≥ +0).
TEXT ·reluGrad32AVX(SB), NOSPLIT, $0-32
	MOVQ dz+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	VPXORD Z0, Z0, Z0
rg_loop:
	CMPQ CX, $16
	JL rg_tail
	VMOVUPS (DX), Z1
	VCMPPS $0x0c, Z0, Z1, K2   // y ≠ 0 (ordered)
	VMOVUPS.Z (SI), K2, Z2
	VMOVUPS Z2, (DI)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $64, DX
	SUBQ $16, CX
	JMP rg_loop
rg_tail:
	TESTQ CX, CX
	JZ rg_done
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (DX), K1, Z1
	VCMPPS $0x0c, Z0, Z1, K1, K2
	VMOVUPS.Z (SI), K2, Z2
	VMOVUPS Z2, K1, (DI)
rg_done:
	VZEROUPPER
	RET

// AVX2 versions (8 lanes; Y15 holds the lane mask of the current vector, from masktab2).

DATA masktab2<>+0(SB)/8, $-1
DATA masktab2<>+8(SB)/8, $-1
DATA masktab2<>+16(SB)/8, $-1
DATA masktab2<>+24(SB)/8, $-1
DATA masktab2<>+32(SB)/8, $0
DATA masktab2<>+40(SB)/8, $0
DATA masktab2<>+48(SB)/8, $0
DATA masktab2<>+56(SB)/8, $0
GLOBL masktab2<>(SB), RODATA|NOPTR, $64

// func maxPoolForward32AVX2(x, y *float32, idx *int32, cells, start *int32, npix, c int)
TEXT ·maxPoolForward32AVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ idx+16(FP), DX
	MOVQ cells+24(FP), R8
	MOVQ start+32(FP), R9
	MOVQ npix+40(FP), R10
	MOVQ c+48(FP), R11
	VMOVDQU iota<>(SB), Y7
	LEAQ masktab2<>+32(SB), R14
	XORQ R12, R12
m2f_pixel:
	CMPQ R12, R10
	JGE m2f_done
	MOVLQSX (R9)(R12*4), R13
	MOVLQSX 4(R9)(R12*4), R15
	XORQ BX, BX
m2f_vec:
	CMPQ BX, R11
	JGE m2f_nextpixel
	MOVQ R11, CX                   // lanes = min(8, c − v)
	SUBQ BX, CX
	MOVQ $8, AX
	CMPQ CX, AX
	JGE m2f_full
	NEGQ CX
	VMOVDQU (R14)(CX*4), Y15
	MOVLQSX (R8)(R13*4), AX
	ADDQ BX, AX
	VMASKMOVPS (SI)(AX*4), Y15, Y0 // best
	MOVQ AX, X1
	VPBROADCASTD X1, Y1
	VPADDD Y7, Y1, Y1              // best index
	MOVQ R13, CX
	INCQ CX
m2f_cell:
	CMPQ CX, R15
	JGE m2f_store
	MOVLQSX (R8)(CX*4), AX
	ADDQ BX, AX
	VMASKMOVPS (SI)(AX*4), Y15, Y2
	VCMPPS $0x1e, Y0, Y2, Y4       // Y2 > Y0
	VBLENDVPS Y4, Y2, Y0, Y0
	MOVQ AX, X3
	VPBROADCASTD X3, Y3
	VPADDD Y7, Y3, Y3
	VBLENDVPS Y4, Y3, Y1, Y1
	INCQ CX
	JMP m2f_cell
m2f_store:
	MOVQ R12, AX
	IMULQ R11, AX
	ADDQ BX, AX
	VMASKMOVPS Y0, Y15, (DI)(AX*4)
	VPMASKMOVD Y1, Y15, (DX)(AX*4)
	ADDQ $8, BX
	JMP m2f_vec
m2f_full:                          // all 8 lanes: plain loads and stores
	MOVLQSX (R8)(R13*4), AX
	ADDQ BX, AX
	VMOVUPS (SI)(AX*4), Y0
	MOVQ AX, X1
	VPBROADCASTD X1, Y1
	VPADDD Y7, Y1, Y1
	MOVQ R13, CX
	INCQ CX
m2ff_cell:
	CMPQ CX, R15
	JGE m2ff_store
	MOVLQSX (R8)(CX*4), AX
	ADDQ BX, AX
	VMOVUPS (SI)(AX*4), Y2
	VCMPPS $0x1e, Y0, Y2, Y4       // Y2 > Y0
	VBLENDVPS Y4, Y2, Y0, Y0
	MOVQ AX, X3
	VPBROADCASTD X3, Y3
	VPADDD Y7, Y3, Y3
	VBLENDVPS Y4, Y3, Y1, Y1
	INCQ CX
	JMP m2ff_cell
m2ff_store:
	MOVQ R12, AX
	IMULQ R11, AX
	ADDQ BX, AX
	VMOVUPS Y0, (DI)(AX*4)
	VMOVDQU Y1, (DX)(AX*4)
	ADDQ $8, BX
	JMP m2f_vec
m2f_nextpixel:
	INCQ R12
	JMP m2f_pixel
m2f_done:
	VZEROUPPER
	RET

// func maxPoolBackward32AVX2(dx, grad *float32, idx *int32, cells, start *int32, npix, c int)
TEXT ·maxPoolBackward32AVX2(SB), NOSPLIT, $0-56
	MOVQ dx+0(FP), SI
	MOVQ grad+8(FP), DI
	MOVQ idx+16(FP), DX
	MOVQ cells+24(FP), R8
	MOVQ start+32(FP), R9
	MOVQ npix+40(FP), R10
	MOVQ c+48(FP), R11
	VMOVDQU iota<>(SB), Y7
	LEAQ masktab2<>+32(SB), R14
	XORQ R12, R12
m2b_pixel:
	CMPQ R12, R10
	JGE m2b_done
	MOVLQSX (R9)(R12*4), R13
	MOVLQSX 4(R9)(R12*4), R15
	XORQ BX, BX
m2b_vec:
	CMPQ BX, R11
	JGE m2b_nextpixel
	MOVQ R11, CX
	SUBQ BX, CX
	MOVQ $8, AX
	CMPQ CX, AX
	JGE m2b_full
	NEGQ CX
	VMOVDQU (R14)(CX*4), Y15
	MOVQ R12, AX
	IMULQ R11, AX
	ADDQ BX, AX
	VMASKMOVPS (DI)(AX*4), Y15, Y0  // gradient
	VPMASKMOVD (DX)(AX*4), Y15, Y1  // winners
	MOVQ R13, CX
m2b_cell:
	CMPQ CX, R15
	JGE m2b_nextvec
	MOVLQSX (R8)(CX*4), AX
	ADDQ BX, AX
	MOVQ AX, X3
	VPBROADCASTD X3, Y3
	VPADDD Y7, Y3, Y3
	VPCMPEQD Y3, Y1, Y4
	VPAND Y15, Y4, Y4
	VMASKMOVPS (SI)(AX*4), Y4, Y5
	VADDPS Y0, Y5, Y5
	VMASKMOVPS Y5, Y4, (SI)(AX*4)
	INCQ CX
	JMP m2b_cell
m2b_nextvec:
	ADDQ $8, BX
	JMP m2b_vec
m2b_full:
	// All 8 lanes: dx += (g where this cell won, else +0), a plain load and store. Adding
	// +0 changes no value: dx starts at +0 and a sum of floats is never −0 from there (round
	// to nearest), and a NaN stays the same NaN; dx is the first operand, as in Go's +=.
	MOVQ R12, AX
	IMULQ R11, AX
	ADDQ BX, AX
	VMOVUPS (DI)(AX*4), Y0          // gradient
	VMOVDQU (DX)(AX*4), Y1          // winners
	MOVQ R13, CX
m2bf_cell:
	CMPQ CX, R15
	JGE m2b_nextvec
	MOVLQSX (R8)(CX*4), AX
	ADDQ BX, AX
	MOVQ AX, X3
	VPBROADCASTD X3, Y3
	VPADDD Y7, Y3, Y3
	VPCMPEQD Y3, Y1, Y4
	VANDPS Y0, Y4, Y4
	VMOVUPS (SI)(AX*4), Y5
	VADDPS Y4, Y5, Y5
	VMOVUPS Y5, (SI)(AX*4)
	INCQ CX
	JMP m2bf_cell
m2b_nextpixel:
	INCQ R12
	JMP m2b_pixel
m2b_done:
	VZEROUPPER
	RET

// func reluGrad32AVX2(dz, grad, y *float32, n int)
TEXT ·reluGrad32AVX2(SB), NOSPLIT, $0-32
	MOVQ dz+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
	VXORPS Y0, Y0, Y0
r2_loop:
	CMPQ CX, $8
	JL r2_tail
	VMOVUPS (DX), Y1
	VCMPPS $0x0c, Y0, Y1, Y2   // y ≠ 0 (ordered)
	VANDPS (SI), Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JMP r2_loop
r2_tail:
	TESTQ CX, CX
	JZ r2_done
	NEGQ CX
	LEAQ masktab2<>+32(SB), AX
	VMOVDQU (AX)(CX*4), Y15
	VMASKMOVPS (DX), Y15, Y1
	VCMPPS $0x0c, Y0, Y1, Y2
	VMASKMOVPS (SI), Y15, Y3
	VANDPS Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, (DI)
r2_done:
	VZEROUPPER
	RET

// func relu32AVX512(dst, src *float32, n int)
// dst = src where src ≥ 0 or NaN, else 0: VMAXPS(0, x) is x unless 0 > x (MAXPS returns
// its second operand when either is NaN or both are zero), as the Go loop's
// "if v < 0 { v = 0 }".
TEXT ·relu32AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
relu_loop:
	CMPQ CX, $32
	JL relu_one
	VMOVUPS (SI), Z1
	VMOVUPS 64(SI), Z2
	VMAXPS Z1, Z0, Z1
	VMAXPS Z2, Z0, Z2
	VMOVUPS Z1, (DI)
	VMOVUPS Z2, 64(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	SUBQ $32, CX
	JMP relu_loop
relu_one:
	CMPQ CX, $16
	JL relu_tail
	VMOVUPS (SI), Z1
	VMAXPS Z1, Z0, Z1
	VMOVUPS Z1, (DI)
	ADDQ $64, DI
	ADDQ $64, SI
	SUBQ $16, CX
relu_tail:
	TESTQ CX, CX
	JZ relu_done
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z1
	VMAXPS Z1, Z0, Z1
	VMOVUPS Z1, K1, (DI)
relu_done:
	VZEROUPPER
	RET

// func relu32AVX2(dst, src *float32, n int)
// relu32AVX512 in 8 lanes (VMAXPS(0, x): x unless 0 > x, so NaN and −0 pass), the last
// n mod 8 values 4 lanes and then one at a time (VMAXSS, the same rule).
TEXT ·relu32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
r2f_loop:
	CMPQ CX, $16
	JL r2f_one
	VMOVUPS (SI), Y1
	VMOVUPS 32(SI), Y2
	VMAXPS Y1, Y0, Y1
	VMAXPS Y2, Y0, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	SUBQ $16, CX
	JMP r2f_loop
r2f_one:
	CMPQ CX, $8
	JL r2f_four
	VMOVUPS (SI), Y1
	VMAXPS Y1, Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
r2f_four:
	CMPQ CX, $4
	JL r2f_scalar
	VMOVUPS (SI), X1
	VMAXPS X1, X0, X1
	VMOVUPS X1, (DI)
	ADDQ $16, DI
	ADDQ $16, SI
	SUBQ $4, CX
r2f_scalar:
	TESTQ CX, CX
	JZ r2f_done
	VMOVSS (SI), X1
	VMAXSS X1, X0, X1
	VMOVSS X1, (DI)
	ADDQ $4, DI
	ADDQ $4, SI
	DECQ CX
	JMP r2f_scalar
r2f_done:
	VZEROUPPER
	RET

// func patchCopy32AVX2(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)
// patchCopy32 in 8 lanes: rows are zeroed 32 bytes at a time, then 16, then 4; runs are
// copied in blocks of 8 values, a run's last partial block as the run's last 8 values again
// (overlapping: a copy is a copy however it is cut), runs of 4–7 as two overlapping blocks
// of 4 and shorter ones value by value (no masked stores).
TEXT ·patchCopy32AVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ u+8(FP), DX           // row p of u
	MOVQ runs+16(FP), R8
	MOVQ start+24(FP), R9
	MOVQ padded+32(FP), R10
	MOVQ npos+40(FP), R11
	MOVQ k+48(FP), R12
	SHLQ $2, R12               // row bytes
	VXORPS Y0, Y0, Y0
	XORQ R13, R13              // p
pc2_pos:
	CMPQ R13, R11
	JGE pc2_done
	MOVBQZX (R10)(R13*1), AX
	TESTQ AX, AX
	JZ pc2_runs
	XORQ R14, R14              // zero the row
pc2_zero:
	MOVQ R12, AX
	SUBQ R14, AX
	CMPQ AX, $32
	JL pc2_zero16
	VMOVUPS Y0, (DX)(R14*1)
	ADDQ $32, R14
	JMP pc2_zero
pc2_zero16:
	CMPQ AX, $16
	JL pc2_zero4
	VMOVUPS X0, (DX)(R14*1)
	ADDQ $16, R14
	SUBQ $16, AX
pc2_zero4:
	TESTQ AX, AX
	JZ pc2_runs
	MOVL $0, (DX)(R14*1)
	ADDQ $4, R14
	SUBQ $4, AX
	JMP pc2_zero4
pc2_runs:
	MOVLQSX (R9)(R13*4), R14   // first run
	MOVLQSX 4(R9)(R13*4), R15  // end
pc2_run:
	CMPQ R14, R15
	JGE pc2_nextpos
	LEAQ (R14)(R14*2), AX
	MOVLQSX (R8)(AX*4), BX     // src
	MOVLQSX 4(R8)(AX*4), DI    // dst
	MOVLQSX 8(R8)(AX*4), AX    // n
	LEAQ (SI)(BX*4), BX
	LEAQ (DX)(DI*4), DI
	CMPQ AX, $8
	JL pc2_short
pc2_copy:                      // n ≥ 8: blocks of 8, then the last 8 again (overlapping)
	CMPQ AX, $8
	JLE pc2_last8
	VMOVUPS (BX), Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, BX
	ADDQ $32, DI
	SUBQ $8, AX
	JMP pc2_copy
pc2_last8:
	VMOVUPS -32(BX)(AX*4), Y1
	VMOVUPS Y1, -32(DI)(AX*4)
	JMP pc2_nextrun
pc2_short:                     // n < 8: the first 4 and the last 4 (overlapping), or one by one
	CMPQ AX, $4
	JL pc2_copy1
	VMOVUPS (BX), X1
	VMOVUPS -16(BX)(AX*4), X2
	VMOVUPS X1, (DI)
	VMOVUPS X2, -16(DI)(AX*4)
	JMP pc2_nextrun
pc2_copy1:
	TESTQ AX, AX
	JZ pc2_nextrun
	MOVL (BX), CX
	MOVL CX, (DI)
	ADDQ $4, BX
	ADDQ $4, DI
	DECQ AX
	JMP pc2_copy1
pc2_nextrun:
	INCQ R14
	JMP pc2_run
pc2_nextpos:
	ADDQ R12, DX
	INCQ R13
	JMP pc2_pos
pc2_done:
	VZEROUPPER
	RET

// func patchAdd32AVX2(dx, du *float32, runs *int32, start *int32, npos, k int)
// patchAdd32 in 8 lanes, then 4, then one value at a time: each dx value gets the same
// additions in the same order as in the Go loop.
TEXT ·patchAdd32AVX2(SB), NOSPLIT, $0-48
	MOVQ dx+0(FP), SI
	MOVQ du+8(FP), DX          // row p of du
	MOVQ runs+16(FP), R8
	MOVQ start+24(FP), R9
	MOVQ npos+32(FP), R11
	MOVQ k+40(FP), R12
	SHLQ $2, R12
	XORQ R13, R13
pa2_pos:
	CMPQ R13, R11
	JGE pa2_done
	MOVLQSX (R9)(R13*4), R14
	MOVLQSX 4(R9)(R13*4), R15
pa2_run:
	CMPQ R14, R15
	JGE pa2_nextpos
	LEAQ (R14)(R14*2), AX
	MOVLQSX (R8)(AX*4), BX
	MOVLQSX 4(R8)(AX*4), DI
	MOVLQSX 8(R8)(AX*4), AX
	LEAQ (SI)(BX*4), BX        // into dx
	LEAQ (DX)(DI*4), DI        // from du
pa2_add:
	CMPQ AX, $8
	JL pa2_add4
	VMOVUPS (BX), Y1
	VADDPS (DI), Y1, Y1
	VMOVUPS Y1, (BX)
	ADDQ $32, BX
	ADDQ $32, DI
	SUBQ $8, AX
	JMP pa2_add
pa2_add4:
	CMPQ AX, $4
	JL pa2_add1
	VMOVUPS (BX), X1
	VADDPS (DI), X1, X1
	VMOVUPS X1, (BX)
	ADDQ $16, BX
	ADDQ $16, DI
	SUBQ $4, AX
pa2_add1:
	TESTQ AX, AX
	JZ pa2_nextrun
	VMOVSS (BX), X1
	VADDSS (DI), X1, X1
	VMOVSS X1, (BX)
	ADDQ $4, BX
	ADDQ $4, DI
	DECQ AX
	JMP pa2_add1
pa2_nextrun:
	INCQ R14
	JMP pa2_run
pa2_nextpos:
	ADDQ R12, DX
	INCQ R13
	JMP pa2_pos
pa2_done:
	VZEROUPPER
	RET
