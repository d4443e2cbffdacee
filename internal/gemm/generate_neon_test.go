package gemm

import "testing"

// TestGeneratedNEONKernelsUpToDate: kernels_arm64.s and kernels_arm64.go are exactly
// gen_neon.go's output.
func TestGeneratedNEONKernelsUpToDate(t *testing.T) {
	checkGenerated(t, "gen_neon.go", "kernels_arm64.s", "kernels_arm64.go")
}
