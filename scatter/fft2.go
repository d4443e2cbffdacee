package scatter

// fft2 is a 2-D complex FFT on row-major grids (rows, then columns), with one 1-D plan per
// length. It is not safe for concurrent use: every worker owns one.
type fft2 struct {
	plans map[int]*cfft
	col   []complex128
}

func (f *fft2) plan(n int) *cfft {
	if f.plans == nil {
		f.plans = map[int]*cfft{}
	}
	p, ok := f.plans[n]
	if !ok {
		p = newCFFT(n)
		f.plans[n] = p
	}
	return p
}

// forward replaces the M×N grid x by its unnormalised DFT.
func (f *fft2) forward(x []complex128, M, N int) { f.transform(x, M, N, false) }

// inverse replaces the M×N spectrum x by its inverse DFT, normalised by 1/(MN).
func (f *fft2) inverse(x []complex128, M, N int) {
	f.transform(x, M, N, true)
	s := complex(1/float64(M*N), 0)
	for i := range x {
		x[i] *= s
	}
}

func (f *fft2) transform(x []complex128, M, N int, inverse bool) {
	row, col := f.plan(N), f.plan(M)
	for i := 0; i < M; i++ {
		row.transform(x[i*N:(i+1)*N], inverse)
	}
	if cap(f.col) < M {
		f.col = make([]complex128, M)
	}
	c := f.col[:M]
	for j := 0; j < N; j++ {
		for i := 0; i < M; i++ {
			c[i] = x[i*N+j]
		}
		col.transform(c, inverse)
		for i := 0; i < M; i++ {
			x[i*N+j] = c[i]
		}
	}
}
