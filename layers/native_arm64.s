#include "textflag.h"

// ASIMD (NEON) kernels of layers.Native's float32 ops (see native_arm64.go): vectors of 4
// lanes, then single lanes. Each does the Go version's arithmetic in its order, so the
// results are equal bit for bit (TestNativeAssemblyMatchesGo, TestNEONKernelsMatchGo). Go's
// assembler lacks FCMLT, FCMGT, BIC and BIT: WORDs, each with its mnemonic beside it.

// func relu32NEON(dst, src *float32, n int)
// dst = src, 0 where src < 0 (FCMLT then BIC: NaN and −0 pass, as the Go loop).
TEXT ·relu32NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
relu16:
	CMP $16, R2
	BLT relu4
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]
	WORD $0x4ea0e804 // FCMLT V4.4S, V0.4S, #0
	WORD $0x4ea0e825 // FCMLT V5.4S, V1.4S, #0
	WORD $0x4ea0e846 // FCMLT V6.4S, V2.4S, #0
	WORD $0x4ea0e867 // FCMLT V7.4S, V3.4S, #0
	WORD $0x4e641c00 // BIC V0.16B, V0.16B, V4.16B
	WORD $0x4e651c21 // BIC V1.16B, V1.16B, V5.16B
	WORD $0x4e661c42 // BIC V2.16B, V2.16B, V6.16B
	WORD $0x4e671c63 // BIC V3.16B, V3.16B, V7.16B
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUB $16, R2, R2
	B relu16
relu4:
	CMP $4, R2
	BLT relu1
	VLD1.P 16(R1), [V0.S4]
	WORD $0x4ea0e804 // FCMLT V4.4S, V0.4S, #0
	WORD $0x4e641c00 // BIC V0.16B, V0.16B, V4.16B
	VST1.P [V0.S4], 16(R0)
	SUB $4, R2, R2
	B relu4
relu1:
	CBZ R2, reludone
	FMOVS.P 4(R1), F0
	WORD $0x4ea0e804 // FCMLT V4.4S, V0.4S, #0
	WORD $0x4e641c00 // BIC V0.16B, V0.16B, V4.16B
	FMOVS.P F0, 4(R0)
	SUB $1, R2, R2
	B relu1
reludone:
	RET

// func reluGrad32NEON(dz, grad, y *float32, n int)
// dz = grad where y > 0, else +0 (FCMGT then AND: as the Go loop, NaN and −0 give 0).
TEXT ·reluGrad32NEON(SB), NOSPLIT, $0-32
	MOVD dz+0(FP), R0
	MOVD grad+8(FP), R1
	MOVD y+16(FP), R2
	MOVD n+24(FP), R3
rg16:
	CMP $16, R3
	BLT rg4
	VLD1.P 64(R2), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4ea0c800 // FCMGT V0.4S, V0.4S, #0
	WORD $0x4ea0c821 // FCMGT V1.4S, V1.4S, #0
	WORD $0x4ea0c842 // FCMGT V2.4S, V2.4S, #0
	WORD $0x4ea0c863 // FCMGT V3.4S, V3.4S, #0
	VAND V0.B16, V4.B16, V4.B16
	VAND V1.B16, V5.B16, V5.B16
	VAND V2.B16, V6.B16, V6.B16
	VAND V3.B16, V7.B16, V7.B16
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R0)
	SUB $16, R3, R3
	B rg16
rg4:
	CMP $4, R3
	BLT rg1
	VLD1.P 16(R2), [V0.S4]
	VLD1.P 16(R1), [V4.S4]
	WORD $0x4ea0c800 // FCMGT V0.4S, V0.4S, #0
	VAND V0.B16, V4.B16, V4.B16
	VST1.P [V4.S4], 16(R0)
	SUB $4, R3, R3
	B rg4
rg1:
	CBZ R3, rgdone
	FMOVS.P 4(R2), F0
	FMOVS.P 4(R1), F4
	WORD $0x4ea0c800 // FCMGT V0.4S, V0.4S, #0
	VAND V0.B16, V4.B16, V4.B16
	FMOVS.P F4, 4(R0)
	SUB $1, R3, R3
	B rg1
rgdone:
	RET

// func maxPoolForward32NEON(x, y *float32, idx *int32, cells, start *int32, npix, c int)
// As maxPoolForward32 (native_amd64.s) for c a multiple of 4: for each output pixel p and
// each vector of 4 channels, y = the first window cell's values, idx their offsets, then
// for each further cell s (in window order) where x[s+ch] > y (FCMGT: strictly greater, so
// NaN never wins and the first maximum stays) y and idx take the cell's (BIT).
TEXT ·maxPoolForward32NEON(SB), NOSPLIT, $0-56
	MOVD x+0(FP), R0
	MOVD y+8(FP), R1
	MOVD idx+16(FP), R2
	MOVD cells+24(FP), R3
	MOVD start+32(FP), R4
	MOVD npix+40(FP), R5
	MOVD c+48(FP), R6
	MOVD $0x0000000100000000, R7 // V31 = {0, 1, 2, 3}
	VMOV R7, V31.D[0]
	MOVD $0x0000000300000002, R7
	VMOV R7, V31.D[1]
mp_pix:
	CBZ R5, mp_done
	MOVW (R4), R7               // start[p]
	MOVW 4(R4), R8              // start[p+1]
	MOVD $0, R10                // ch
mp_ch:
	CMP R6, R10
	BGE mp_nextpix
	MOVW (R3)(R7<<2), R9        // first cell
	ADD R9, R10, R11            // offset first+ch
	ADD R11<<2, R0, R12
	VLD1 (R12), [V0.S4]         // y
	VDUP R11, V1.S4
	VADD V31.S4, V1.S4, V1.S4   // idx
	ADD $1, R7, R13             // next cell index j
mp_cell:
	CMP R8, R13
	BGE mp_store
	MOVW (R3)(R13<<2), R9
	ADD R9, R10, R11
	ADD R11<<2, R0, R12
	VLD1 (R12), [V2.S4]
	VDUP R11, V3.S4
	VADD V31.S4, V3.S4, V3.S4
	WORD $0x6ea0e444 // FCMGT V4.4S, V2.4S, V0.4S
	WORD $0x6ea41c40 // BIT V0.16B, V2.16B, V4.16B
	WORD $0x6ea41c61 // BIT V1.16B, V3.16B, V4.16B
	ADD $1, R13, R13
	B mp_cell
mp_store:
	ADD R10<<2, R1, R12
	VST1 [V0.S4], (R12)
	ADD R10<<2, R2, R12
	VST1 [V1.S4], (R12)
	ADD $4, R10, R10
	B mp_ch
mp_nextpix:
	ADD R6<<2, R1, R1
	ADD R6<<2, R2, R2
	ADD $4, R4, R4
	SUB $1, R5, R5
	B mp_pix
mp_done:
	RET

// RUNS … ENDRUNS: im2col's and col2im's loop over position p's runs (src, dst, n) of
// runs[3·start[p]…3·start[p+1]] (R3 at start[p]; R10 up to R11): for each, R13 points at
// x[src] (x or dx in R0), R14 at row p (R1) + dst, R15 holds n, and the body goes on at
// nextrun. ENDRUNS moves on to the next position (R1 a row of k (R6) on, R5 the positions
// left) at pos.
#define RUNS \
runs: \
	MOVW (R3), R10; \
	MOVW 4(R3), R11; \
run: \
	CMP R11, R10; \
	BGE nextpos; \
	ADD R10<<1, R10, R12; \
	ADD R12<<2, R2, R12; \
	MOVW (R12), R13; \
	MOVW 4(R12), R14; \
	MOVW 8(R12), R15; \
	ADD R13<<2, R0, R13; \
	ADD R14<<2, R1, R14

#define ENDRUNS \
nextrun: \
	ADD $1, R10, R10; \
	B run; \
nextpos: \
	ADD R6<<2, R1, R1; \
	ADD $4, R3, R3; \
	SUB $1, R5, R5; \
	B pos; \
done: \
	RET

// func patchCopy32NEON(x, u *float32, runs *int32, start *int32, padded *uint8, npos, k int)
// As patchCopy32 (native_amd64.s): im2col of one image. For position p, zero row p of u
// ([npos × k]) when padded[p], then copy each run (src, dst, n) of runs[3·start[p]…]:
// u[p·k+dst…+n] = x[src…+n], 4 floats at a time, then one.
TEXT ·patchCopy32NEON(SB), NOSPLIT, $0-56
	MOVD x+0(FP), R0
	MOVD u+8(FP), R1            // row p of u
	MOVD runs+16(FP), R2
	MOVD start+24(FP), R3
	MOVD padded+32(FP), R4
	MOVD npos+40(FP), R5
	MOVD k+48(FP), R6
	VEOR V0.B16, V0.B16, V0.B16
pos:
	CBZ R5, done
	MOVBU.P 1(R4), R7
	CBZ R7, runs
	MOVD R1, R8                 // zero the row
	MOVD R6, R9
zero4:
	CMP $4, R9
	BLT zero1
	VST1.P [V0.S4], 16(R8)
	SUB $4, R9, R9
	B zero4
zero1:
	CBZ R9, runs
	MOVW.P ZR, 4(R8)
	SUB $1, R9, R9
	B zero1
	RUNS
copy4:
	CMP $4, R15
	BLT copy1
	VLD1.P 16(R13), [V1.S4]
	VST1.P [V1.S4], 16(R14)
	SUB $4, R15, R15
	B copy4
copy1:
	CBZ R15, nextrun
	MOVWU.P 4(R13), R16
	MOVW.P R16, 4(R14)
	SUB $1, R15, R15
	B copy1
	ENDRUNS

// func patchAdd32NEON(dx, du *float32, runs *int32, start *int32, npos, k int)
// As patchAdd32 (native_amd64.s): col2im of one image, dx[src…+n] += du[p·k+dst…+n] for
// every run of every position, in position and run order (each sum one FADD, as Go's).
// dx must start at zero.
TEXT ·patchAdd32NEON(SB), NOSPLIT, $0-48
	MOVD dx+0(FP), R0
	MOVD du+8(FP), R1           // row p of du
	MOVD runs+16(FP), R2
	MOVD start+24(FP), R3
	MOVD npos+32(FP), R5
	MOVD k+40(FP), R6
pos:
	CBZ R5, done
	RUNS
add4:
	CMP $4, R15
	BLT add1
	VLD1 (R13), [V1.S4]
	VLD1.P 16(R14), [V2.S4]
	WORD $0x4e22d421 // FADD V1.4S, V1.4S, V2.4S
	VST1.P [V1.S4], 16(R13)
	SUB $4, R15, R15
	B add4
add1:
	CBZ R15, nextrun
	FMOVS (R13), F1
	FMOVS.P 4(R14), F2
	FADDS F2, F1, F1
	FMOVS.P F1, 4(R13)
	SUB $1, R15, R15
	B add1
	ENDRUNS
