package layers

import (
	"fmt"
	"testing"

	"github.com/privtrain/privtrain/internal/cpupath"
)

// benchAsm runs body as the sub-benchmarks prefix+"path=P" for every CPU path P this
// machine supports (internal/cpupath: avx512, avx2, neon, generic), forcing each in turn.
func benchAsm(b *testing.B, prefix string, body func(b *testing.B)) {
	for _, p := range cpupath.Supported() {
		b.Run(fmt.Sprintf("%spath=%v", prefix, p), func(b *testing.B) {
			defer cpupath.Force(p)()
			body(b)
		})
	}
}
