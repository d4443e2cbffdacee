package cpupath

import "golang.org/x/sys/cpu"

func detect() []Path {
	var p []Path
	// x/sys/cpu also checks that the OS saves the ZMM (YMM) registers.
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		p = append(p, AVX512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		p = append(p, AVX2)
	}
	return append(p, Generic)
}
