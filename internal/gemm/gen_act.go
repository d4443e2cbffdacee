//go:build ignore

// gen_act writes act_amd64.s and act_coef.go: the AVX-512 and AVX2 float32 kernels of
// Tanh, Sigmoid and their derivatives, and the polynomial coefficients they share with the
// pure-Go path (act.go).
//
//	go run gen_act.go
//
// The method, per value x (a = |x|, sign restored at the end):
//
//	E(y) = exp(−y) for y ≥ 0 (y clamped at 104, where exp(−y) underflows float32):
//	       n = round(−y·log₂e), s = y + n·ln2 (Cody–Waite, ln2 = hi + lo),
//	       exp(−s) by its Taylor polynomial of degree 7 (|s| ≤ ln2/2: truncation < 0.1 ulp),
//	       times 2ⁿ (VSCALEFPS, or two exponent-field multiplies so subnormals round once).
//	tanh:  a < 0.625: a + a³·P(a²), P the degree-6 interpolant of (tanh √u − √u)/u^{3/2}
//	       at Chebyshev nodes on [0, 0.625²] (near-minimax); else 1 − 2·E/(1 + E), E = E(2a):
//	       near saturation the result is then one rounding of 1 minus a small, accurate
//	       term (correctly rounded in practice), where (1 − E)/(1 + E) rounds three times
//	       and may land an ulp off; a normalisation after a saturated tanh (GroupNorm)
//	       amplifies that ulp.
//	sigmoid: E = E(a); 1/(1 + E) for x ≥ 0, E/(1 + E) for x < 0 (no cancellation anywhere,
//	       so tiny results keep their relative accuracy down to the subnormals).
//
// The coefficients are computed here from tanh's Taylor series (exact rationals), not
// copied from elsewhere; act_test.go checks the result against math.Tanh and math.Exp.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"math"
	"math/big"
	"os"
	"path/filepath"
)

const (
	tanhSmall = 0.625 // below it, the odd polynomial
	polyDeg   = 6     // degree of P in u = a²
	expLimit  = 104   // clamp of y in exp(−y)
)

// tanhTaylor returns the coefficients a_k of tanh x = Σ a_k x^k, k < n, from
// tanh' = 1 − tanh²: (k+1)·a_{k+1} = [k = 0] − Σ_{i+j=k} a_i a_j.
func tanhTaylor(n int) []*big.Rat {
	a := make([]*big.Rat, n)
	for i := range a {
		a[i] = new(big.Rat)
	}
	for k := 0; k+1 < n; k++ {
		s := new(big.Rat)
		if k == 0 {
			s.SetInt64(1)
		}
		for i := 0; i <= k; i++ {
			s.Sub(s, new(big.Rat).Mul(a[i], a[k-i]))
		}
		a[k+1].Quo(s, big.NewRat(int64(k+1), 1))
	}
	return a
}

// tanhPoly returns P's monomial coefficients p_0…p_deg (in u = a²), rounded to float32.
func tanhPoly() []float32 {
	tay := tanhTaylor(61)
	// g(u) = Σ_k a_{2k+3} u^k; at u ≤ 0.39 the terms shrink by ≈ (2·0.625/π)² per step.
	g := func(u float64) float64 {
		s := 0.0
		for k := 28; k >= 0; k-- {
			c, _ := tay[2*k+3].Float64()
			s = s*u + c
		}
		return s
	}
	n := polyDeg + 1
	hi := tanhSmall * tanhSmall
	m := make([][]float64, n) // Vandermonde rows | g
	for i := range n {
		u := hi / 2 * (1 - math.Cos(math.Pi*(float64(i)+0.5)/float64(n)))
		row := make([]float64, n+1)
		p := 1.0
		for j := range n {
			row[j] = p
			p *= u
		}
		row[n] = g(u)
		m[i] = row
	}
	for c := range n { // Gaussian elimination, partial pivoting
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		m[c], m[piv] = m[piv], m[c]
		for r := range n {
			if r == c {
				continue
			}
			f := m[r][c] / m[c][c]
			for j := c; j <= n; j++ {
				m[r][j] -= f * m[c][j]
			}
		}
	}
	out := make([]float32, n)
	for i := range n {
		out[i] = float32(m[i][n] / m[i][i])
	}
	return out
}

// consts are the kernels' constants, each broadcast to a full vector in the table.
type constant struct {
	name string
	bits uint32
}

func f32(name string, v float32) constant { return constant{name, math.Float32bits(v)} }

func constants(p []float32) []constant {
	cs := []constant{
		{"absmask", 0x7fffffff},
		f32("one", 1),
		f32("zero", 0),
		f32("limit", expLimit),
		f32("small", tanhSmall),
		f32("neglog2e", float32(-math.Log2E)),
		f32("ln2hi", 0.693359375),
		f32("ln2lo", -2.12194440e-4),
		{"bias127", 127},
	}
	for k := 7; k >= 0; k-- { // exp(−s) = Σ (−s)^k/k!
		c := 1 / math.Gamma(float64(k+1))
		if k%2 == 1 {
			c = -c
		}
		cs = append(cs, f32(fmt.Sprintf("e%d", k), float32(c)))
	}
	for k := len(p) - 1; k >= 0; k-- {
		cs = append(cs, f32(fmt.Sprintf("p%d", k), p[k]))
	}
	return cs
}

type isa struct {
	suffix string // function name suffix
	reg    string // Z or Y
	lanes  int
	table  string
	and    string
	or     string
	xor    string
	avx512 bool
	cs     []constant
}

func (x isa) r(i int) string { return fmt.Sprintf("%s%d", x.reg, i) }

func (x isa) c(name string) string {
	for i, c := range x.cs {
		if c.name == name {
			return fmt.Sprintf("%s<>+%d(SB)", x.table, i*4*x.lanes)
		}
	}
	panic(name)
}

func (x isa) writeTable(w *bytes.Buffer) {
	fmt.Fprintf(w, "\n// %s: each constant broadcast to %d lanes, in this order:", x.table, x.lanes)
	for _, c := range x.cs {
		fmt.Fprintf(w, " %s", c.name)
	}
	w.WriteString("\n")
	for i, c := range x.cs {
		for l := range x.lanes {
			fmt.Fprintf(w, "DATA %s<>+%d(SB)/4, $0x%08x\n", x.table, (i*x.lanes+l)*4, c.bits)
		}
	}
	fmt.Fprintf(w, "GLOBL %s<>(SB), RODATA|NOPTR, $%d\n", x.table, len(x.cs)*x.lanes*4)
}

// expNeg writes R5 = exp(−R3) for R3 in [0, 104] (or NaN); it uses R4, R5, R8–R10.
func (x isa) expNeg(w *bytes.Buffer) {
	r := x.r
	fmt.Fprintf(w, "\tVMULPS %s, %s, %s\n", x.c("neglog2e"), r(3), r(4))
	if x.avx512 {
		fmt.Fprintf(w, "\tVRNDSCALEPS $0, %s, %s\n", r(4), r(4))
	} else {
		fmt.Fprintf(w, "\tVROUNDPS $0, %s, %s\n", r(4), r(4))
	}
	// s = y + n·hi + n·lo
	fmt.Fprintf(w, "\tVMOVAPS %s, %s\n", r(3), r(8))
	fmt.Fprintf(w, "\tVFMADD231PS %s, %s, %s\n", x.c("ln2hi"), r(4), r(8))
	fmt.Fprintf(w, "\tVFMADD231PS %s, %s, %s\n", x.c("ln2lo"), r(4), r(8))
	fmt.Fprintf(w, "\tVMOVUPS %s, %s\n", x.c("e7"), r(5))
	for k := 6; k >= 0; k-- {
		fmt.Fprintf(w, "\tVFMADD213PS %s, %s, %s\n", x.c(fmt.Sprintf("e%d", k)), r(8), r(5))
	}
	if x.avx512 {
		fmt.Fprintf(w, "\tVSCALEFPS %s, %s, %s\n", r(4), r(5), r(5))
		return
	}
	// 2ⁿ as 2^(n>>1)·2^(n−n>>1): both factors normal for n ≥ −150.
	fmt.Fprintf(w, "\tVCVTPS2DQ %s, %s\n", r(4), r(8))
	fmt.Fprintf(w, "\tVPSRAD $1, %s, %s\n", r(8), r(9))
	fmt.Fprintf(w, "\tVPSUBD %s, %s, %s\n", r(9), r(8), r(10))
	for _, t := range []int{9, 10} {
		fmt.Fprintf(w, "\tVPADDD %s, %s, %s\n", x.c("bias127"), r(t), r(t))
		fmt.Fprintf(w, "\tVPSLLD $23, %s, %s\n", r(t), r(t))
		fmt.Fprintf(w, "\tVMULPS %s, %s, %s\n", r(t), r(5), r(5))
	}
}

// tanhBody: R0 = x in, R6 = tanh x out.
func (x isa) tanhBody(w *bytes.Buffer) {
	r := x.r
	fmt.Fprintf(w, "\t%s %s, %s, %s\n", x.and, x.c("absmask"), r(0), r(1)) // a
	fmt.Fprintf(w, "\t%s %s, %s, %s\n", x.xor, r(1), r(0), r(2))           // sign
	fmt.Fprintf(w, "\tVADDPS %s, %s, %s\n", r(1), r(1), r(3))
	fmt.Fprintf(w, "\tVMINPS %s, %s, %s\n", r(3), r(14), r(3)) // NaN stays NaN
	x.expNeg(w)
	fmt.Fprintf(w, "\tVADDPS %s, %s, %s\n", r(5), r(15), r(7)) // 1 + E
	fmt.Fprintf(w, "\tVDIVPS %s, %s, %s\n", r(7), r(5), r(6))  // q = E/(1 + E)
	fmt.Fprintf(w, "\tVADDPS %s, %s, %s\n", r(6), r(6), r(6))  // 2q, exact
	fmt.Fprintf(w, "\tVSUBPS %s, %s, %s\n", r(6), r(15), r(6)) // 1 − 2q
	// small branch: a + a·u·P(u)
	fmt.Fprintf(w, "\tVMULPS %s, %s, %s\n", r(1), r(1), r(8)) // u
	fmt.Fprintf(w, "\tVMOVUPS %s, %s\n", x.c(fmt.Sprintf("p%d", polyDeg)), r(9))
	for k := polyDeg - 1; k >= 0; k-- {
		fmt.Fprintf(w, "\tVFMADD213PS %s, %s, %s\n", x.c(fmt.Sprintf("p%d", k)), r(8), r(9))
	}
	fmt.Fprintf(w, "\tVMULPS %s, %s, %s\n", r(1), r(8), r(8))      // a·u
	fmt.Fprintf(w, "\tVFMADD213PS %s, %s, %s\n", r(1), r(8), r(9)) // a·u·P + a
	if x.avx512 {
		fmt.Fprintf(w, "\tVCMPPS $1, %s, %s, K1\n", x.c("small"), r(1))
		fmt.Fprintf(w, "\tVMOVAPS %s, K1, %s\n", r(9), r(6))
	} else {
		fmt.Fprintf(w, "\tVCMPPS $1, %s, %s, %s\n", x.c("small"), r(1), r(10))
		fmt.Fprintf(w, "\tVBLENDVPS %s, %s, %s, %s\n", r(10), r(9), r(6), r(6))
	}
	fmt.Fprintf(w, "\t%s %s, %s, %s\n", x.or, r(2), r(6), r(6))
}

// sigmoidBody: R0 = x in, R6 = σ(x) out.
func (x isa) sigmoidBody(w *bytes.Buffer) {
	r := x.r
	fmt.Fprintf(w, "\t%s %s, %s, %s\n", x.and, x.c("absmask"), r(0), r(3))
	fmt.Fprintf(w, "\tVMINPS %s, %s, %s\n", r(3), r(14), r(3))
	x.expNeg(w)
	fmt.Fprintf(w, "\tVADDPS %s, %s, %s\n", r(5), r(15), r(7)) // 1 + E
	// numerator: E where x < 0, else 1
	if x.avx512 {
		fmt.Fprintf(w, "\tVMOVAPS %s, %s\n", r(15), r(6))
		fmt.Fprintf(w, "\tVCMPPS $1, %s, %s, K1\n", x.c("zero"), r(0))
		fmt.Fprintf(w, "\tVMOVAPS %s, K1, %s\n", r(5), r(6))
	} else {
		fmt.Fprintf(w, "\tVBLENDVPS %s, %s, %s, %s\n", r(0), r(5), r(15), r(6))
	}
	fmt.Fprintf(w, "\tVDIVPS %s, %s, %s\n", r(7), r(6), r(6))
}

// act writes func name(dst, src, bias *float32, n int): dst[i] = f(src[i] + bias[i]) (no
// bias when nil), n a multiple of the lanes.
func (x isa) act(w *bytes.Buffer, name string, body func(*bytes.Buffer)) {
	vb := 4 * x.lanes
	fmt.Fprintf(w, "\n// func %s(dst, src, bias *float32, n int)\nTEXT ·%s(SB), NOSPLIT, $0-32\n", name, name)
	w.WriteString("\tMOVQ dst+0(FP), DI\n\tMOVQ src+8(FP), SI\n\tMOVQ bias+16(FP), DX\n\tMOVQ n+24(FP), CX\n")
	fmt.Fprintf(w, "\tVMOVUPS %s, %s\n", x.c("limit"), x.r(14))
	fmt.Fprintf(w, "\tVMOVUPS %s, %s\n", x.c("one"), x.r(15))
	w.WriteString("\tTESTQ DX, DX\n\tJZ nobias\n")
	for _, bias := range []bool{true, false} {
		lbl := "withbias"
		if !bias {
			lbl = "nobias"
		}
		fmt.Fprintf(w, "%s:\n\tTESTQ CX, CX\n\tJZ done\n", lbl)
		fmt.Fprintf(w, "\tVMOVUPS (SI), %s\n", x.r(0))
		if bias {
			fmt.Fprintf(w, "\tVADDPS (DX), %s, %s\n", x.r(0), x.r(0))
			fmt.Fprintf(w, "\tADDQ $%d, DX\n", vb)
		}
		body(w)
		fmt.Fprintf(w, "\tVMOVUPS %s, (DI)\n", x.r(6))
		fmt.Fprintf(w, "\tADDQ $%d, SI\n\tADDQ $%d, DI\n\tSUBQ $%d, CX\n\tJMP %s\n", vb, vb, x.lanes, lbl)
	}
	w.WriteString("done:\n\tVZEROUPPER\n\tRET\n")
}

// grad writes func name(dz, g, y *float32, n int): dz = g·f'(y) from the activation's
// output y, n a multiple of the lanes.
func (x isa) grad(w *bytes.Buffer, name string, sigmoid bool) {
	vb := 4 * x.lanes
	r := x.r
	fmt.Fprintf(w, "\n// func %s(dz, grad, out *float32, n int)\nTEXT ·%s(SB), NOSPLIT, $0-32\n", name, name)
	w.WriteString("\tMOVQ dz+0(FP), DI\n\tMOVQ grad+8(FP), SI\n\tMOVQ out+16(FP), DX\n\tMOVQ n+24(FP), CX\n")
	fmt.Fprintf(w, "\tVMOVUPS %s, %s\n", x.c("one"), r(15))
	w.WriteString("loop:\n\tTESTQ CX, CX\n\tJZ done\n")
	fmt.Fprintf(w, "\tVMOVUPS (DX), %s\n", r(0))
	if sigmoid { // g·y·(1 − y)
		fmt.Fprintf(w, "\tVSUBPS %s, %s, %s\n", r(0), r(15), r(1))
		fmt.Fprintf(w, "\tVMULPS %s, %s, %s\n", r(0), r(1), r(1))
	} else { // g·(1 − y²)
		fmt.Fprintf(w, "\tVMOVAPS %s, %s\n", r(15), r(1))
		fmt.Fprintf(w, "\tVFNMADD231PS %s, %s, %s\n", r(0), r(0), r(1))
	}
	fmt.Fprintf(w, "\tVMULPS (SI), %s, %s\n", r(1), r(1))
	fmt.Fprintf(w, "\tVMOVUPS %s, (DI)\n", r(1))
	fmt.Fprintf(w, "\tADDQ $%d, SI\n\tADDQ $%d, DI\n\tADDQ $%d, DX\n\tSUBQ $%d, CX\n\tJMP loop\n", vb, vb, vb, x.lanes)
	w.WriteString("done:\n\tVZEROUPPER\n\tRET\n")
}

func main() {
	out := flag.String("out", ".", "directory to write act_amd64.s and act_coef.go into")
	flag.Parse()
	p := tanhPoly()
	cs := constants(p)
	isas := []isa{
		{suffix: "AVX512", reg: "Z", lanes: 16, table: "act512", and: "VPANDD", or: "VPORD", xor: "VPXORD", avx512: true, cs: cs},
		{suffix: "AVX2", reg: "Y", lanes: 8, table: "act256", and: "VPAND", or: "VPOR", xor: "VPXOR", cs: cs},
	}
	var s bytes.Buffer
	s.WriteString("// Code generated by gen_act.go; DO NOT EDIT.\n\n#include \"textflag.h\"\n")
	for _, x := range isas {
		x.writeTable(&s)
	}
	for _, x := range isas {
		x.act(&s, "tanh32"+x.suffix, x.tanhBody)
		x.act(&s, "sigmoid32"+x.suffix, x.sigmoidBody)
		x.grad(&s, "tanhGrad32"+x.suffix, false)
		x.grad(&s, "sigmoidGrad32"+x.suffix, true)
	}
	var g bytes.Buffer
	g.WriteString("// Code generated by gen_act.go; DO NOT EDIT.\n\npackage gemm\n\n")
	fmt.Fprintf(&g, "// Constants of the float32 tanh and sigmoid (see gen_act.go), shared by the assembly\n// kernels and the pure-Go path.\nconst (\n")
	fmt.Fprintf(&g, "\ttanhSmall = %v\n\texpLimit  = %v\n\tnegLog2E  = %v\n\tln2Hi     = %v\n\tln2Lo     = %v\n)\n\n",
		float32(tanhSmall), float32(expLimit), float32(-math.Log2E), float32(0.693359375), float32(-2.12194440e-4))
	g.WriteString("// expNegPoly[k] is (−1)^k/k!, k = 0…7, rounded to float32.\nvar expNegPoly = [8]float32{")
	for k := 0; k <= 7; k++ {
		for _, c := range cs {
			if c.name == fmt.Sprintf("e%d", k) {
				fmt.Fprintf(&g, "%v, ", math.Float32frombits(c.bits))
			}
		}
	}
	g.WriteString("}\n\n// tanhPoly[k] is P's coefficient of u^k: tanh a ≈ a + a³·P(a²) for a < tanhSmall.\nvar tanhPoly = [...]float32{")
	for _, c := range p {
		fmt.Fprintf(&g, "%v, ", c)
	}
	g.WriteString("}\n")
	src, err := format.Source(g.Bytes())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, b := range map[string][]byte{"act_amd64.s": s.Bytes(), "act_coef.go": src} {
		if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
