#include "textflag.h"

// AVX-512 and AVX2 kernels of layers.Native's float32 ops (see native_amd64.go). AVX-512
// takes channel vectors of 16 lanes, the last vector of a row of c values masked with K1;
// AVX2 8 lanes, with Y15 the lane mask of a partial vector, from masktab2. The loops that
// both widths share are the macros below.

// iota: the int32 lanes 0, 1, …, 15, two to a quadword.
DATA iota<>+0(SB)/8, $0x0000000100000000
DATA iota<>+8(SB)/8, $0x0000000300000002
DATA iota<>+16(SB)/8, $0x0000000500000004
DATA iota<>+24(SB)/8, $0x0000000700000006
DATA iota<>+32(SB)/8, $0x0000000900000008
DATA iota<>+40(SB)/8, $0x0000000b0000000a
DATA iota<>+48(SB)/8, $0x0000000d0000000c
DATA iota<>+56(SB)/8, $0x0000000f0000000e
GLOBL iota<>(SB), RODATA|NOPTR, $64

// masktab2: 8 lanes of −1 then 8 of 0; the 8 int32 from masktab2<>+32 − 4n select the first n
// lanes.
DATA masktab2<>+0(SB)/8, $-1
DATA masktab2<>+8(SB)/8, $-1
DATA masktab2<>+16(SB)/8, $-1
DATA masktab2<>+24(SB)/8, $-1
DATA masktab2<>+32(SB)/8, $0
DATA masktab2<>+40(SB)/8, $0
DATA masktab2<>+48(SB)/8, $0
DATA masktab2<>+56(SB)/8, $0
GLOBL masktab2<>(SB), RODATA|NOPTR, $64

// K1LANES: K1 = the first CX lanes (CX < 16). Uses AX.
#define K1LANES \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K1

// MAXPOOL_ARGS(a, b): the max-pool kernels' arguments (a, b: x, y forward; dx, grad
// backward) in SI, DI; idx DX, cells R8, start R9, npix R10, c R11.
#define MAXPOOL_ARGS(a, b) \
	MOVQ a+0(FP), SI; \
	MOVQ b+8(FP), DI; \
	MOVQ idx+16(FP), DX; \
	MOVQ cells+24(FP), R8; \
	MOVQ start+32(FP), R9; \
	MOVQ npix+40(FP), R10; \
	MOVQ c+48(FP), R11

// PIXELS(end) … ENDPIXELS: the max-pool kernels' loops over output pixels p (R12) < npix and,
// per pixel, its channel vectors at v (BX) < c; its window's cells are R13 = start[p] up to
// end = start[p+1]. The body goes on with JMP vec.
#define PIXELS(end) \
	XORQ R12, R12; \
pixel: \
	CMPQ R12, R10; \
	JGE done; \
	MOVLQSX (R9)(R12*4), R13; \
	MOVLQSX 4(R9)(R12*4), end; \
	XORQ BX, BX; \
vec: \
	CMPQ BX, R11; \
	JGE nextpixel

#define ENDPIXELS \
nextpixel: \
	INCQ R12; \
	JMP pixel; \
done: \
	VZEROUPPER; \
	RET

// OUTPUT: AX = p·c + v, the offset of the vector in y, grad and idx.
#define OUTPUT \
	MOVQ R12, AX; \
	IMULQ R11, AX; \
	ADDQ BX, AX

// PATCH_ARGS(a, b, np, nk): im2col's and col2im's arguments: a (x or dx) in SI, b (u or du, row
// p) in DX, runs R8, start R9, npos R11 and the row length k in bytes R12 (np, nk: the frame
// offsets of npos and k).
#define PATCH_ARGS(a, b, np, nk) \
	MOVQ a+0(FP), SI; \
	MOVQ b+8(FP), DX; \
	MOVQ runs+16(FP), R8; \
	MOVQ start+24(FP), R9; \
	MOVQ npos+np(FP), R11; \
	MOVQ k+nk(FP), R12; \
	SHLQ $2, R12

// POSITIONS … RUNS … ENDRUNS: im2col's and col2im's loops over positions p (R13) < npos and,
// per position (after what stands between POSITIONS and RUNS), its runs (src, dst, n) of
// runs[3·start[p]…3·start[p+1]] (R14 up to R15): for each, BX points at x[src], DI at
// row p + dst, AX holds n, and the body goes on at nextrun.
#define POSITIONS \
	XORQ R13, R13; \
pos: \
	CMPQ R13, R11; \
	JGE done

#define RUNS \
runs: \
	MOVLQSX (R9)(R13*4), R14; \
	MOVLQSX 4(R9)(R13*4), R15; \
run: \
	CMPQ R14, R15; \
	JGE nextpos; \
	LEAQ (R14)(R14*2), AX; \
	MOVLQSX (R8)(AX*4), BX; \
	MOVLQSX 4(R8)(AX*4), DI; \
	MOVLQSX 8(R8)(AX*4), AX; \
	LEAQ (SI)(BX*4), BX; \
	LEAQ (DX)(DI*4), DI

#define ENDRUNS \
nextrun: \
	INCQ R14; \
	JMP run; \
nextpos: \
	ADDQ R12, DX; \
	INCQ R13; \
	JMP pos; \
done: \
	VZEROUPPER; \
	RET

// ADDRUN(L, V, a, b, tail): col2im's run in vectors of L lanes while n (AX) ≥ L: dx (BX) =
// a + b, a and b dx and du in the order each width has always added them (it decides which
// NaN's payload a sum of two keeps), V scratch; then on at tail.
#define ADDRUN(L, V, a, b, tail) \
add: \
	CMPQ AX, $L; \
	JL tail; \
	VMOVUPS a, V; \
	VADDPS b, V, V; \
	VMOVUPS V, (BX); \
	ADDQ $(4*L), BX; \
	ADDQ $(4*L), DI; \
	SUBQ $L, AX; \
	JMP add

#define RELUGRAD_ARGS \
	MOVQ dz+0(FP), DI; \
	MOVQ grad+8(FP), SI; \
	MOVQ y+16(FP), DX; \
	MOVQ n+24(FP), CX

// RELUGRAD(L, Y, M, G, select): dz = g where y ≠ 0 for the vectors of L lanes while n (CX) ≥
// L: y in Y, the comparison with zero (V0) in M, select leaves g there or 0 in G.
#define RELUGRAD(L, V0, Y, M, G, select) \
loop: \
	CMPQ CX, $L; \
	JL tail; \
	VMOVUPS (DX), Y; \
	VCMPPS $0x0c, V0, Y, M; \
	select; \
	VMOVUPS G, (DI); \
	ADDQ $(4*L), DI; \
	ADDQ $(4*L), SI; \
	ADDQ $(4*L), DX; \
	SUBQ $L, CX; \
	JMP loop

#define RELU_ARGS \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), CX

// RELU(L, V0, A, B): dst = max(0, src) (V0 zeros) for vectors of L lanes (A, B): two at a time
// while n (CX) ≥ 2L, then one if n ≥ L; then what is left goes on at tail.
#define RELU(L, V0, A, B) \
loop: \
	CMPQ CX, $(2*L); \
	JL one; \
	VMOVUPS (SI), A; \
	VMOVUPS (4*L)(SI), B; \
	VMAXPS A, V0, A; \
	VMAXPS B, V0, B; \
	VMOVUPS A, (DI); \
	VMOVUPS B, (4*L)(DI); \
	ADDQ $(8*L), DI; \
	ADDQ $(8*L), SI; \
	SUBQ $(2*L), CX; \
	JMP loop; \
one: \
	CMPQ CX, $L; \
	JL tail; \
	VMOVUPS (SI), A; \
	VMAXPS A, V0, A; \
	VMOVUPS A, (DI); \
	ADDQ $(4*L), DI; \
	ADDQ $(4*L), SI; \
	SUBQ $L, CX

// func maxPoolForward32(x, y *float32, idx *int32, cells, start *int32, npix, c int)
// For each output pixel p: y[p·c + ch] = max over its window cells j (input offsets
// cells[start[p]…start[p+1]−1]) of x[cells[j] + ch], idx the winning input offset; the
// first maximum in window order wins (strictly greater replaces).
TEXT ·maxPoolForward32(SB), NOSPLIT, $0-56
	MAXPOOL_ARGS(x, y)
	VMOVDQU32 iota<>(SB), Z7
	PIXELS(R14)
	// K1 = lanes left in this row: min(16, c − v)
	MOVQ R11, CX
	SUBQ BX, CX
	MOVQ $16, AX
	CMPQ CX, AX
	CMOVQGT AX, CX
	K1LANES
	// First cell.
	MOVLQSX (R8)(R13*4), AX
	ADDQ BX, AX
	VMOVUPS.Z (SI)(AX*4), K1, Z0   // best
	VPBROADCASTD AX, Z1
	VPADDD Z7, Z1, Z1              // best index
	MOVQ R13, R15
	INCQ R15
cell:
	CMPQ R15, R14
	JGE store
	MOVLQSX (R8)(R15*4), AX
	ADDQ BX, AX
	VMOVUPS.Z (SI)(AX*4), K1, Z2
	VCMPPS $0x1e, Z0, Z2, K1, K2   // K2 = Z2 > Z0
	VMOVAPS Z2, K2, Z0
	VPBROADCASTD AX, Z3
	VPADDD Z7, Z3, Z3
	VMOVDQA32 Z3, K2, Z1
	INCQ R15
	JMP cell
store:
	OUTPUT
	VMOVUPS Z0, K1, (DI)(AX*4)
	VMOVDQU32 Z1, K1, (DX)(AX*4)
	ADDQ $16, BX
	JMP vec
	ENDPIXELS

// func maxPoolBackward32(dx, grad *float32, idx *int32, cells, start *int32, npix, c int)
// dx[idx[p·c+ch]] += g[p·c+ch], walking each window so that no lane scatters: for each cell
// j of pixel p, the lanes whose winner is cells[j]+ch add g there. dx must start at zero.
TEXT ·maxPoolBackward32(SB), NOSPLIT, $0-56
	MAXPOOL_ARGS(dx, grad)
	VMOVDQU32 iota<>(SB), Z7
	PIXELS(R14)
	MOVQ R11, CX
	SUBQ BX, CX
	MOVQ $16, AX
	CMPQ CX, AX
	CMOVQGT AX, CX
	K1LANES
	OUTPUT
	VMOVUPS.Z (DI)(AX*4), K1, Z0   // gradient
	VMOVDQU32.Z (DX)(AX*4), K1, Z1 // winners
	MOVQ R13, R15
cell:
	CMPQ R15, R14
	JGE nextvec
	MOVLQSX (R8)(R15*4), AX
	ADDQ BX, AX
	VPBROADCASTD AX, Z3
	VPADDD Z7, Z3, Z3
	VPCMPEQD Z3, Z1, K1, K2
	VMOVUPS.Z (SI)(AX*4), K2, Z4
	VADDPS Z0, Z4, Z4
	VMOVUPS Z4, K2, (SI)(AX*4)
	INCQ R15
	JMP cell
nextvec:
	ADDQ $16, BX
	JMP vec
	ENDPIXELS

// func patchCopy32(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)
// im2col of one image: for position p, zero row p of u ([npos × k]) when padded[p], then
// copy each run (src, dst, n) of runs[3·start[p]…]: u[p·k+dst…+n] = x[src…+n].
TEXT ·patchCopy32(SB), NOSPLIT, $0-56
	PATCH_ARGS(x, u, 40, 48)
	MOVQ padded+32(FP), R10
	VPXORD Z0, Z0, Z0
	POSITIONS
	MOVBQZX (R10)(R13*1), AX
	TESTQ AX, AX
	JZ runs
	XORQ R14, R14              // zero the row, 64 bytes at a time
zero:
	MOVQ R12, AX
	SUBQ R14, AX
	CMPQ AX, $64
	JL zerotail
	VMOVUPS Z0, (DX)(R14*1)
	ADDQ $64, R14
	JMP zero
zerotail:
	TESTQ AX, AX
	JZ runs
	MOVQ AX, CX
	SHRQ $2, CX
	K1LANES
	VMOVUPS Z0, K1, (DX)(R14*1)
	RUNS
copy:
	CMPQ AX, $16
	JL copytail
	VMOVUPS (BX), Z1
	VMOVUPS Z1, (DI)
	ADDQ $64, BX
	ADDQ $64, DI
	SUBQ $16, AX
	JMP copy
copytail:
	TESTQ AX, AX
	JZ nextrun
	MOVQ AX, CX
	K1LANES
	VMOVUPS.Z (BX), K1, Z1
	VMOVUPS Z1, K1, (DI)
	ENDRUNS

// func patchAdd32(dx, du *float32, runs *int32, start *int32, npos, k int)
// col2im of one image: dx[src…+n] += du[p·k+dst…+n] for every run of every position, in
// position and run order (BX into dx, DI from du). dx must start at zero.
TEXT ·patchAdd32(SB), NOSPLIT, $0-48
	PATCH_ARGS(dx, du, 32, 40)
	POSITIONS
	RUNS
	ADDRUN(16, Z1, (DI), (BX), addtail)
addtail:
	TESTQ AX, AX
	JZ nextrun
	MOVQ AX, CX
	K1LANES
	VMOVUPS.Z (DI), K1, Z1
	VMOVUPS.Z (BX), K1, Z2
	VADDPS Z1, Z2, Z2
	VMOVUPS Z2, K1, (BX)
	ENDRUNS

#define SELECT512 VMOVUPS.Z (SI), K2, Z2

// func reluGrad32AVX(dz, grad, y *float32, n int)
// dz = g where y ≠ 0, else 0 (y are ReLU outputs, ≥ +0).
TEXT ·reluGrad32AVX(SB), NOSPLIT, $0-32
	RELUGRAD_ARGS
	VPXORD Z0, Z0, Z0
	RELUGRAD(16, Z0, Z1, K2, Z2, SELECT512)
tail:
	TESTQ CX, CX
	JZ done
	K1LANES
	VMOVUPS.Z (DX), K1, Z1
	VCMPPS $0x0c, Z0, Z1, K1, K2
	VMOVUPS.Z (SI), K2, Z2
	VMOVUPS Z2, K1, (DI)
done:
	VZEROUPPER
	RET

// AVX2 versions.

// BEST8(load, cell, store): Y0 = the max of the window for the 8 channels at v, Y1 its
// index, as in maxPoolForward32; load(Y) loads x at AX into Y (a partial vector or a whole
// one). Ends with AX at the output (OUTPUT).
#define LOADPART(Y) VMASKMOVPS (SI)(AX*4), Y15, Y
#define LOADFULL(Y) VMOVUPS (SI)(AX*4), Y
#define BEST8(load, cell, store) \
	MOVLQSX (R8)(R13*4), AX; \
	ADDQ BX, AX; \
	load(Y0); \
	MOVQ AX, X1; \
	VPBROADCASTD X1, Y1; \
	VPADDD Y7, Y1, Y1; \
	MOVQ R13, CX; \
	INCQ CX; \
cell: \
	CMPQ CX, R15; \
	JGE store; \
	MOVLQSX (R8)(CX*4), AX; \
	ADDQ BX, AX; \
	load(Y2); \
	VCMPPS $0x1e, Y0, Y2, Y4; \
	VBLENDVPS Y4, Y2, Y0, Y0; \
	MOVQ AX, X3; \
	VPBROADCASTD X3, Y3; \
	VPADDD Y7, Y3, Y3; \
	VBLENDVPS Y4, Y3, Y1, Y1; \
	INCQ CX; \
	JMP cell; \
store: \
	OUTPUT

// LANES8: on to full when 8 lanes are left in the row, else Y15 = the mask of the c − v left.
#define LANES8 \
	MOVQ R11, CX; \
	SUBQ BX, CX; \
	MOVQ $8, AX; \
	CMPQ CX, AX; \
	JGE full; \
	NEGQ CX; \
	VMOVDQU (R14)(CX*4), Y15

// func maxPoolForward32AVX2(x, y *float32, idx *int32, cells, start *int32, npix, c int)
TEXT ·maxPoolForward32AVX2(SB), NOSPLIT, $0-56
	MAXPOOL_ARGS(x, y)
	VMOVDQU iota<>(SB), Y7
	LEAQ masktab2<>+32(SB), R14
	PIXELS(R15)
	LANES8
	BEST8(LOADPART, cell, store)
	VMASKMOVPS Y0, Y15, (DI)(AX*4)
	VPMASKMOVD Y1, Y15, (DX)(AX*4)
	ADDQ $8, BX
	JMP vec
full:                              // all 8 lanes: plain loads and stores
	BEST8(LOADFULL, fullcell, fullstore)
	VMOVUPS Y0, (DI)(AX*4)
	VMOVDQU Y1, (DX)(AX*4)
	ADDQ $8, BX
	JMP vec
	ENDPIXELS

// WINNERS8(cell, add): for each cell from R13 on, Y4 = the lanes of the 8 channels at v whose
// winner (Y1) is that cell, and add adds the gradient (Y0) there.
#define WINNERS8(cell, add) \
	MOVQ R13, CX; \
cell: \
	CMPQ CX, R15; \
	JGE nextvec; \
	MOVLQSX (R8)(CX*4), AX; \
	ADDQ BX, AX; \
	MOVQ AX, X3; \
	VPBROADCASTD X3, Y3; \
	VPADDD Y7, Y3, Y3; \
	VPCMPEQD Y3, Y1, Y4; \
	add; \
	INCQ CX; \
	JMP cell
#define ADDPART \
	VPAND Y15, Y4, Y4; \
	VMASKMOVPS (SI)(AX*4), Y4, Y5; \
	VADDPS Y0, Y5, Y5; \
	VMASKMOVPS Y5, Y4, (SI)(AX*4)
#define ADDFULL \
	VANDPS Y0, Y4, Y4; \
	VMOVUPS (SI)(AX*4), Y5; \
	VADDPS Y4, Y5, Y5; \
	VMOVUPS Y5, (SI)(AX*4)
// func maxPoolBackward32AVX2(dx, grad *float32, idx *int32, cells, start *int32, npix, c int)
TEXT ·maxPoolBackward32AVX2(SB), NOSPLIT, $0-56
	MAXPOOL_ARGS(dx, grad)
	VMOVDQU iota<>(SB), Y7
	LEAQ masktab2<>+32(SB), R14
	PIXELS(R15)
	LANES8
	OUTPUT
	VMASKMOVPS (DI)(AX*4), Y15, Y0  // gradient
	VPMASKMOVD (DX)(AX*4), Y15, Y1  // winners
	WINNERS8(cell, ADDPART)
nextvec:
	ADDQ $8, BX
	JMP vec
full:
	// All 8 lanes: dx += (g where this cell won, else +0), a plain load and store. Adding
	// +0 changes no value: dx starts at +0 and a sum of floats is never −0 from there (round
	// to nearest), and a NaN stays the same NaN; dx is the first operand, as in Go's +=.
	OUTPUT
	VMOVUPS (DI)(AX*4), Y0          // gradient
	VMOVDQU (DX)(AX*4), Y1          // winners
	WINNERS8(fullcell, ADDFULL)
	ENDPIXELS

#define SELECT2 VANDPS (SI), Y2, Y2

// func reluGrad32AVX2(dz, grad, y *float32, n int)
TEXT ·reluGrad32AVX2(SB), NOSPLIT, $0-32
	RELUGRAD_ARGS
	VXORPS Y0, Y0, Y0
	RELUGRAD(8, Y0, Y1, Y2, Y2, SELECT2)
tail:
	TESTQ CX, CX
	JZ done
	NEGQ CX
	LEAQ masktab2<>+32(SB), AX
	VMOVDQU (AX)(CX*4), Y15
	VMASKMOVPS (DX), Y15, Y1
	VCMPPS $0x0c, Y0, Y1, Y2
	VMASKMOVPS (SI), Y15, Y3
	VANDPS Y3, Y2, Y2
	VMASKMOVPS Y2, Y15, (DI)
done:
	VZEROUPPER
	RET

// func relu32AVX512(dst, src *float32, n int)
// dst = src where src ≥ 0 or NaN, else 0: VMAXPS(0, x) is x unless 0 > x (MAXPS returns
// its second operand when either is NaN or both are zero), as the Go loop's
// "if v < 0 { v = 0 }".
TEXT ·relu32AVX512(SB), NOSPLIT, $0-24
	RELU_ARGS
	VPXORD Z0, Z0, Z0
	RELU(16, Z0, Z1, Z2)
tail:
	TESTQ CX, CX
	JZ done
	K1LANES
	VMOVUPS.Z (SI), K1, Z1
	VMAXPS Z1, Z0, Z1
	VMOVUPS Z1, K1, (DI)
done:
	VZEROUPPER
	RET

// func relu32AVX2(dst, src *float32, n int)
// relu32AVX512 in 8 lanes (VMAXPS(0, x): x unless 0 > x, so NaN and −0 pass), the last
// n mod 8 values 4 lanes and then one at a time (VMAXSS, the same rule).
TEXT ·relu32AVX2(SB), NOSPLIT, $0-24
	RELU_ARGS
	VXORPS Y0, Y0, Y0
	RELU(8, Y0, Y1, Y2)
tail:
	CMPQ CX, $4
	JL scalar
	VMOVUPS (SI), X1
	VMAXPS X1, X0, X1
	VMOVUPS X1, (DI)
	ADDQ $16, DI
	ADDQ $16, SI
	SUBQ $4, CX
scalar:
	TESTQ CX, CX
	JZ done
	VMOVSS (SI), X1
	VMAXSS X1, X0, X1
	VMOVSS X1, (DI)
	ADDQ $4, DI
	ADDQ $4, SI
	DECQ CX
	JMP scalar
done:
	VZEROUPPER
	RET

// func patchCopy32AVX2(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)
// patchCopy32 in 8 lanes: rows are zeroed 32 bytes at a time, then 16, then 4; runs are
// copied in blocks of 8 values, a run's last partial block as the run's last 8 values again
// (overlapping: a copy is a copy however it is cut), runs of 4–7 as two overlapping blocks
// of 4 and shorter ones value by value (no masked stores).
TEXT ·patchCopy32AVX2(SB), NOSPLIT, $0-56
	PATCH_ARGS(x, u, 40, 48)
	MOVQ padded+32(FP), R10
	VXORPS Y0, Y0, Y0
	POSITIONS
	MOVBQZX (R10)(R13*1), AX
	TESTQ AX, AX
	JZ runs
	XORQ R14, R14              // zero the row
zero:
	MOVQ R12, AX
	SUBQ R14, AX
	CMPQ AX, $32
	JL zero16
	VMOVUPS Y0, (DX)(R14*1)
	ADDQ $32, R14
	JMP zero
zero16:
	CMPQ AX, $16
	JL zero4
	VMOVUPS X0, (DX)(R14*1)
	ADDQ $16, R14
	SUBQ $16, AX
zero4:
	TESTQ AX, AX
	JZ runs
	MOVL $0, (DX)(R14*1)
	ADDQ $4, R14
	SUBQ $4, AX
	JMP zero4
	RUNS
	CMPQ AX, $8
	JL short
copy:                          // n ≥ 8: blocks of 8, then the last 8 again (overlapping)
	CMPQ AX, $8
	JLE last8
	VMOVUPS (BX), Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, BX
	ADDQ $32, DI
	SUBQ $8, AX
	JMP copy
last8:
	VMOVUPS -32(BX)(AX*4), Y1
	VMOVUPS Y1, -32(DI)(AX*4)
	JMP nextrun
short:                         // n < 8: the first 4 and the last 4 (overlapping), or one by one
	CMPQ AX, $4
	JL copy1
	VMOVUPS (BX), X1
	VMOVUPS -16(BX)(AX*4), X2
	VMOVUPS X1, (DI)
	VMOVUPS X2, -16(DI)(AX*4)
	JMP nextrun
copy1:
	TESTQ AX, AX
	JZ nextrun
	MOVL (BX), CX
	MOVL CX, (DI)
	ADDQ $4, BX
	ADDQ $4, DI
	DECQ AX
	JMP copy1
	ENDRUNS

// func patchAdd32AVX2(dx, du *float32, runs *int32, start *int32, npos, k int)
// patchAdd32 in 8 lanes, then 4, then one value at a time: each dx value gets the same
// additions in the same order as in the Go loop.
TEXT ·patchAdd32AVX2(SB), NOSPLIT, $0-48
	PATCH_ARGS(dx, du, 32, 40)
	POSITIONS
	RUNS
	ADDRUN(8, Y1, (BX), (DI), add4)
add4:
	CMPQ AX, $4
	JL add1
	VMOVUPS (BX), X1
	VADDPS (DI), X1, X1
	VMOVUPS X1, (BX)
	ADDQ $16, BX
	ADDQ $16, DI
	SUBQ $4, AX
add1:
	TESTQ AX, AX
	JZ nextrun
	VMOVSS (BX), X1
	VADDSS (DI), X1, X1
	VMOVSS X1, (BX)
	ADDQ $4, BX
	ADDQ $4, DI
	DECQ AX
	JMP add1
	ENDRUNS
