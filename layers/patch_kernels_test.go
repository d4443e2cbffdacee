package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// TestPatchKernelsOverwriteScratch runs im2col and col2im of convolutions with padding, strides and
// channel counts that give runs of 1 to 20 floats, on every path this CPU supports (the
// AVX-512 or NEON kernels there are) and with the Go loops (goKernels), into scratch
// filled with NaN (so a row of padding the kernel forgets to zero shows): the patches and
// the image gradients must agree bit for bit.
func TestPatchKernelsOverwriteScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 7))
	for _, cs := range []struct {
		c, h, w int
		l       Conv2D
	}{
		{1, 7, 6, Conv2D{Filters: 2, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}},
		{3, 9, 8, Conv2D{Filters: 2, Kernel: [2]int{5, 4}, Stride: [2]int{2, 1}, Padding: [2]int{2, 1}}},
		{4, 6, 6, Conv2D{Filters: 2, Kernel: [2]int{2, 5}, Stride: [2]int{1, 2}, Padding: [2]int{0, 2}}},
		{5, 5, 7, Conv2D{Filters: 2, Kernel: [2]int{3, 4}, Padding: [2]int{1, 0}}},
		{2, 6, 5, Conv2D{Filters: 2, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}}, // rows of 18
		{1, 5, 5, Conv2D{Filters: 2, Kernel: [2]int{3, 1}, Padding: [2]int{1, 0}}}, // rows of 3
	} {
		in := activation{image: true, nhwc: true, h: cs.h, w: cs.w, c: cs.c}
		w := make([]float32, cs.l.Filters*cs.l.Kernel[0]*cs.l.Kernel[1]*cs.c)
		o, _, err := newConvOp(cs.l, in, 1, [][]float32{w, make([]float32, cs.l.Filters)}, actNone, true, true)
		if err != nil {
			t.Fatal(err)
		}
		x, du := make([]float32, o.h*o.w*o.c), make([]float32, o.p*o.k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range du {
			du[i] = float32(rng.NormFloat64())
		}
		for _, p := range cpupath.Supported() {
			run := func(asm bool) (u, dx []float32) {
				defer cpupath.Force(p)()
				defer func(v bool) { goKernels = v }(goKernels)
				goKernels = !asm
				u, dx = make([]float32, o.p*o.k), make([]float32, len(x))
				for i := range u {
					u[i] = float32(math.NaN())
				}
				for i := range dx {
					dx[i] = float32(math.NaN())
				}
				o.im2col(x, u)
				o.col2im(du, dx)
				return u, dx
			}
			ua, da := run(true)
			ug, dg := run(false)
			for i := range ug {
				if math.Float32bits(ua[i]) != math.Float32bits(ug[i]) {
					t.Fatalf("%v c=%d %+v: patch value %d is %v, Go gives %v", p, cs.c, cs.l, i, ua[i], ug[i])
				}
			}
			for i := range dg {
				if math.Float32bits(da[i]) != math.Float32bits(dg[i]) {
					t.Fatalf("%v c=%d %+v: image gradient %d is %v, Go gives %v", p, cs.c, cs.l, i, da[i], dg[i])
				}
			}
		}
	}
}
