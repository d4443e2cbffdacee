package layers

// kernel is the float32 kernel of the CPU path this package's kernels take now: avx512,
// avx2 or neon (useAsm, useAVX2, useNEON), and false on the generic path (or while a test
// compares the kernels with their Go versions), where the caller's Go loop runs. For a
// kernel that every vector path has; one that a path lacks keeps its own condition.
func kernel[F any](avx512, avx2, neon F) (F, bool) {
	switch {
	case useAsm():
		return avx512, true
	case useAVX2():
		return avx2, true
	case useNEON():
		return neon, true
	}
	var none F
	return none, false
}
