package gemm

import "golang.org/x/sys/cpu"

// useAVX512 and useAVX2 select the assembly kernels; x/sys/cpu also checks that the OS
// saves the ZMM (YMM) registers.
var (
	useAVX512 = cpu.X86.HasAVX512F
	useAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

//go:noescape
func sumSquares32(x *float32, n int) float64
