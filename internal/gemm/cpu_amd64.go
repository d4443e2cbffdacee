package gemm

import "golang.org/x/sys/cpu"

// useAVX512 selects the assembly kernels; x/sys/cpu also checks that the OS saves the
// ZMM and mask registers.
var useAVX512 = cpu.X86.HasAVX512F

//go:noescape
func sumSquares32(x *float32, n int) float64
