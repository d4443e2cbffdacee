package gemm

// SumSquares is Σ x_j², accumulated in float64 whatever T is (per-example gradient norms
// decide clipping, so they get the wider accumulator).
func SumSquares[T Float](x []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	if x32, ok := any(x).([]float32); ok && (useAVX2() || useNEON()) && len(x) >= 32 {
		i = len(x) &^ 31
		switch {
		case useAVX512():
			s0 = sumSquares32(&x32[0], i)
		case useNEON():
			s0 = sumSquaresNEON(&x32[0], i) // bit for bit sumSquares32
		default:
			s0 = sumSquares32AVX2(&x32[0], i) // bit for bit sumSquares32
		}
	}
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		v := float64(x[i])
		s0 += v * v
	}
	return (s0 + s1) + (s2 + s3)
}
