package gemm

import "github.com/privtrain/privtrain/internal/cpupath"

// useAVX512 and useAVX2 select the assembly kernels: the path internal/cpupath decided (the
// best the CPU runs, or a lower one forced by PRIVTRAIN_CPU or a test).
func useAVX512() bool { return cpupath.Current() == cpupath.AVX512 }

func useAVX2() bool { p := cpupath.Current(); return p == cpupath.AVX2 || p == cpupath.AVX512 }

//go:noescape
func sumSquares32(x *float32, n int) float64

//go:noescape
func sumSquares32AVX2(x *float32, n int) float64
