package cpupath

// detect: every arm64 CPU has Advanced SIMD (it is part of ARMv8-A's base, and Go's arm64
// port assumes it).
func detect() []Path { return []Path{NEON, Generic} }
