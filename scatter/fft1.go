package scatter

import "math"

// cfft is a 1-D complex FFT of one length n, mixed radix (4, 2, 3, and any other prime
// by a direct DFT), recursive decimation in time out of place, as KissFFT computes it:
// the transform of the sub-sequences x[q], x[q+p], … of each residue q is computed into
// consecutive blocks of the output, then combined with twiddle factors. The scattering
// transform's grids have lengths 9, 18, 36 (28×28 images) or 10, 20, 40 (32×32), where
// gonum's FFTPACK port (the project's chosen FFT dependency) is much slower: the whole
// transform took 5.3–5.7 ms of CPU per 28×28 image with gonum against 1.8–1.9 ms with
// this, and 17.9–19.3 against 10.7–11.8 ms per 3×32×32 image (BenchmarkTransform, the
// two builds alternated three times on the same tree, 2026-11-24). The defining-sum test
// in fft1_test.go holds it to every length up to 64.
type cfft struct {
	n       int
	factors []int        // radices, product n
	tw      []complex128 // e^{−2πi j/n}, j < n
	twInv   []complex128 // e^{+2πi j/n}
	buf     []complex128 // output scratch
	scratch []complex128 // one generic butterfly's inputs
	// dft and dftInv hold, for each generic radix p, the p×p matrix W_p^{q·j}.
	dft, dftInv map[int][]complex128
}

func newCFFT(n int) *cfft {
	f := &cfft{n: n, tw: make([]complex128, n), twInv: make([]complex128, n), buf: make([]complex128, n)}
	for j := range n {
		s, c := math.Sincos(-2 * math.Pi * float64(j) / float64(n))
		f.tw[j] = complex(c, s)
		f.twInv[j] = complex(c, -s)
	}
	for m := n; m > 1; {
		p := 0
		switch {
		case m%4 == 0:
			p = 4
		case m%2 == 0:
			p = 2
		case m%3 == 0:
			p = 3
		default:
			for p = 5; m%p != 0; p += 2 {
				if p*p > m {
					p = m
					break
				}
			}
		}
		f.factors = append(f.factors, p)
		m /= p
	}
	maxP := 1
	f.dft, f.dftInv = map[int][]complex128{}, map[int][]complex128{}
	for _, p := range f.factors {
		maxP = max(maxP, p)
		if p > 4 && f.dft[p] == nil {
			d, di := make([]complex128, p*p), make([]complex128, p*p)
			for q := range p {
				for j := range p {
					d[q*p+j], di[q*p+j] = f.tw[q*j*(n/p)%n], f.twInv[q*j*(n/p)%n]
				}
			}
			f.dft[p], f.dftInv[p] = d, di
		}
	}
	f.scratch = make([]complex128, maxP)
	return f
}

// transform replaces x (length n) by its unnormalised DFT, with e^{−2πi…} (forward) or
// e^{+2πi…} (inverse).
func (f *cfft) transform(x []complex128, inverse bool) {
	if f.n == 1 {
		return
	}
	tw := f.tw
	if inverse {
		tw = f.twInv
	}
	f.rec(f.buf, x, 1, 0, tw, inverse)
	copy(x, f.buf)
}

// rec writes to out (length m·p…, the product of factors[k:]) the DFT of in[0], in[s],
// in[2s], … .
func (f *cfft) rec(out, in []complex128, s, k int, tw []complex128, inverse bool) {
	p := f.factors[k]
	m := len(out) / p
	if m == 1 {
		for q := range p {
			out[q] = in[q*s]
		}
	} else {
		for q := range p {
			f.rec(out[q*m:(q+1)*m], in[q*s:], s*p, k+1, tw, inverse)
		}
	}
	// Combine: out[k + j·m] = Σ_q W_n^{q·k·stride} out[q·m + k] · W_p^{q·j}, stride = n/(p·m).
	st := f.n / (p * m)
	switch p {
	case 2:
		for i := range m {
			a, b := out[i], out[i+m]*tw[i*st]
			out[i], out[i+m] = a+b, a-b
		}
	case 3:
		w1 := tw[f.n/3] // e^{∓2πi/3}
		for i := range m {
			a := out[i]
			b := out[i+m] * tw[i*st]
			c := out[i+2*m] * tw[2*i*st]
			sum := b + c
			out[i] = a + sum
			// a + w·b + w²·c with w = e^{∓2πi/3}: w + w² = −1, w − w² = ∓i√3.
			h := a - sum*0.5
			d := (b - c) * complex(0, imag(w1))
			out[i+m] = h + d
			out[i+2*m] = h - d
		}
	case 4:
		for i := range m {
			a := out[i]
			b := out[i+m] * tw[i*st]
			c := out[i+2*m] * tw[2*i*st]
			d := out[i+3*m] * tw[3*i*st]
			s0, s1 := a+c, a-c
			s2, s3 := b+d, b-d
			// ∓i·s3
			var r complex128
			if inverse {
				r = complex(-imag(s3), real(s3))
			} else {
				r = complex(imag(s3), -real(s3))
			}
			out[i], out[i+2*m] = s0+s2, s0-s2
			out[i+m], out[i+3*m] = s1+r, s1-r
		}
	default:
		t := f.scratch[:p]
		d := f.dft[p]
		if inverse {
			d = f.dftInv[p]
		}
		for i := range m {
			for q := range p {
				t[q] = out[i+q*m] * tw[q*i*st] // q·i·st < p·m·st = n
			}
			for j := range p {
				var sum complex128
				for q, v := range t {
					sum += v * d[q*p+j]
				}
				out[i+j*m] = sum
			}
		}
	}
}
