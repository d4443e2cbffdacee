package layers

import (
	"fmt"
	"testing"
)

// benchAsm runs body as the sub-benchmarks prefix+"asm=true" (the AVX-512 kernels; left
// out where the CPU has none) and prefix+"asm=false" (their Go versions), setting useAsm
// for each and restoring it afterwards.
func benchAsm(b *testing.B, prefix string, body func(b *testing.B)) {
	for _, asm := range []bool{true, false} {
		if asm && !useAsm {
			continue
		}
		b.Run(fmt.Sprintf("%sasm=%v", prefix, asm), func(b *testing.B) {
			defer func(v bool) { useAsm = v }(useAsm)
			useAsm = asm
			body(b)
		})
	}
}
