package scatter

import (
	"fmt"
	"math"
	"math/cmplx"
	"runtime"

	"github.com/privtrain/privtrain/internal/parallel"
)

const (
	maxJ = 10
	maxL = 64
)

// Channels is the number of scattering channels per input channel of an order-2
// transform: 1 + J·L + L²·J(J−1)/2 (81 for J = 2, L = 8).
func Channels(J, L int) int { return 1 + J*L + L*L*J*(J-1)/2 }

// Scattering is the order-2 2-D scattering transform of H×W images with J scales and L
// angles, as Kymatio's Scattering2D(J, shape=(H, W), L) computes it. It is immutable after
// New and safe for concurrent use.
type Scattering struct {
	J, L, H, W int
	// Bank is the filter bank on the padded grid.
	Bank *Bank
	// padded size and the reflect padding before the first row and column.
	mp, np, top, left int
}

// New returns the transform of H×W images with J scales and L angles. H and W must be at
// least 2^J, as in Kymatio.
func New(J, L, H, W int) (*Scattering, error) {
	if err := check(J, L, H, W); err != nil {
		return nil, err
	}
	s := &Scattering{J: J, L: L, H: H, W: W}
	s.mp, s.np = paddedSize(J, H), paddedSize(J, W)
	s.top, s.left = (s.mp-H)/2, (s.np-W)/2
	var err error
	if s.Bank, err = NewBank(s.mp, s.np, J, L); err != nil {
		return nil, err
	}
	return s, nil
}

// paddedSize is Kymatio's compute_padding: the next multiple of 2^J above n + 2^J, so that
// at least 2^J reflected pixels border the image; unpadding drops one coarse pixel a side.
func paddedSize(J, n int) int {
	step := 1 << J
	return ((n+step)/step + 1) * step
}

// OutputShape is the per-example feature shape [C·Channels(J, L), H/2^J, W/2^J] of C×H×W
// images, or the error New or Transform would report; it builds no filters.
func OutputShape(J, L, C, H, W int) ([]int, error) {
	if err := check(J, L, H, W); err != nil {
		return nil, err
	}
	if C < 1 {
		return nil, fmt.Errorf("scatter: %d channels, want at least 1", C)
	}
	return []int{C * Channels(J, L), paddedSize(J, H)>>J - 2, paddedSize(J, W)>>J - 2}, nil
}

func check(J, L, H, W int) error {
	if J < 1 || J > maxJ {
		return fmt.Errorf("scatter: J = %d, want 1…%d", J, maxJ)
	}
	if L < 1 || L > maxL {
		return fmt.Errorf("scatter: L = %d, want 1…%d", L, maxL)
	}
	if H < 1<<J || W < 1<<J {
		return fmt.Errorf("scatter: image %d×%d is smaller than 2^J = %d on a side", H, W, 1<<J)
	}
	if H > 1<<14 || W > 1<<14 {
		return fmt.Errorf("scatter: image %d×%d is larger than 16384 on a side", H, W)
	}
	return nil
}

// Channels is Channels(s.J, s.L).
func (s *Scattering) Channels() int { return Channels(s.J, s.L) }

// OutputShape is the per-example output shape for C input channels:
// [C·Channels, H/2^J, W/2^J] (integer division), channel c·Channels + k holding path k
// of input channel c.
func (s *Scattering) OutputShape(C int) []int {
	return []int{C * s.Channels(), s.mp>>s.J - 2, s.np>>s.J - 2}
}

// PaddedSize is the grid the filters live on.
func (s *Scattering) PaddedSize() (M, N int) { return s.mp, s.np }

// Transform computes the features of a batch of images, each C×H×W row-major (CHW), laid
// end to end in images. The output holds one OutputShape(C) block per image. Images are
// spread over GOMAXPROCS goroutines; the result does not depend on their number. The
// arithmetic is float64 throughout; only the result is rounded to float32.
func (s *Scattering) Transform(images []float32, C int) ([]float32, error) {
	return transform(s, images, C)
}

// Transform64 is Transform for float64 images and features.
func (s *Scattering) Transform64(images []float64, C int) ([]float64, error) {
	return transform(s, images, C)
}

func transform[T float32 | float64](s *Scattering, images []T, C int) ([]T, error) {
	if C < 1 {
		return nil, fmt.Errorf("scatter: %d channels, want at least 1", C)
	}
	per := C * s.H * s.W
	if len(images)%per != 0 {
		return nil, fmt.Errorf("scatter: %d values are not a whole number of %d×%d×%d images", len(images), C, s.H, s.W)
	}
	for i, v := range images {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("scatter: value %d of the batch (image %d) is %v", i, i/per, v)
		}
	}
	n := len(images) / per
	outShape := s.OutputShape(C)
	outPer := outShape[0] * outShape[1] * outShape[2]
	out := make([]T, n*outPer)
	hw, perC := s.H*s.W, outPer/C
	s.parallel(n, func(w *worker, i int) {
		for c := 0; c < C; c++ {
			off := (i*C + c) * hw
			for k, v := range images[off : off+hw] {
				w.img[k] = float64(v)
			}
			w.channel(w.img, w.out)
			dst := out[i*outPer+c*perC : i*outPer+(c+1)*perC]
			for k, v := range w.out {
				dst[k] = T(v)
			}
		}
	})
	return out, nil
}

// Transform computes the J-scale, L-angle scattering features of a batch of C×H×W images
// (see Scattering.Transform). Build a Scattering with New to transform many batches.
func Transform(J, L int, images []float32, C, H, W int) ([]float32, error) {
	s, err := New(J, L, H, W)
	if err != nil {
		return nil, err
	}
	return s.Transform(images, C)
}

// parallel runs do(w, i) for i in [0, n) on GOMAXPROCS workers, each with its own scratch.
func (s *Scattering) parallel(n int, do func(w *worker, i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	scratch := make([]*worker, workers)
	parallel.For(workers, n, 1, func(wk, lo, hi int) {
		if scratch[wk] == nil {
			scratch[wk] = s.newWorker()
		}
		for i := lo; i < hi; i++ {
			do(scratch[wk], i)
		}
	})
}

// worker holds one goroutine's FFT plans and buffers.
type worker struct {
	s    *Scattering
	f    fft2
	x0   []complex128 // spectrum of the padded image
	u1   []complex128 // spectrum of the current |x ⋆ ψ₁|
	a, b []complex128 // scratch grids
	img  []float64    // one channel in
	out  []float64    // its features out
}

func (s *Scattering) newWorker() *worker {
	size := s.mp * s.np
	return &worker{s: s, x0: make([]complex128, size), u1: make([]complex128, size),
		a: make([]complex128, size), b: make([]complex128, size),
		img: make([]float64, s.H*s.W), out: make([]float64, s.Channels()*(s.mp>>s.J-2)*(s.np>>s.J-2))}
}

// channel writes the Channels() feature maps of one H×W channel to out, in Kymatio's
// order: order 0; order 1 by (j1, ℓ1); order 2 by (j1, ℓ1, j2, ℓ2) with j2 > j1.
func (w *worker) channel(img []float64, out []float64) {
	s := w.s
	M, N, J := s.mp, s.np, s.J
	for i := 0; i < M; i++ {
		r := Reflect(i-s.top, s.H)
		for j := 0; j < N; j++ {
			w.x0[i*N+j] = complex(img[r*s.W+Reflect(j-s.left, s.W)], 0)
		}
	}
	w.f.forward(w.x0, M, N)
	area := (M>>J - 2) * (N>>J - 2)
	emit := func(k int, spec []complex128, res int) {
		w.lowpass(spec, res, out[k*area:(k+1)*area])
	}
	emit(0, w.x0, 0)
	psi := s.Bank.Psi
	k2 := 1 + len(psi) // all of order 1 comes before order 2
	for n1, p1 := range psi {
		j1 := p1.J
		// U1 = |x ⋆ ψ₁| at resolution j1, kept as its spectrum.
		w.bandpass(w.u1, w.x0, p1.Levels[0], 0, j1)
		emit(1+n1, w.u1, j1)
		for _, p2 := range psi {
			if p2.J <= j1 {
				continue
			}
			w.bandpass(w.b, w.u1, p2.Levels[j1], j1, p2.J)
			emit(k2, w.b, p2.J)
			k2++
		}
	}
}

// bandpass sets dst to the spectrum, at resolution to, of |IDFT(spec·filter)| subsampled
// from resolution from to resolution to.
func (w *worker) bandpass(dst, spec []complex128, filter []float64, from, to int) {
	m, n := w.s.mp>>from, w.s.np>>from
	a := w.a[:m*n]
	for i, f := range filter {
		a[i] = spec[i] * complex(f, 0)
	}
	cm, cn := subsample(dst, a, m, n, 1<<(to-from))
	w.f.inverse(dst[:cm*cn], cm, cn)
	for i, v := range dst[:cm*cn] {
		dst[i] = complex(cmplx.Abs(v), 0)
	}
	w.f.forward(dst[:cm*cn], cm, cn)
}

// lowpass writes the real part of IDFT(spec·φ) subsampled to resolution J, without its
// border of one coarse pixel (Kymatio's unpad), to out.
func (w *worker) lowpass(spec []complex128, res int, out []float64) {
	s := w.s
	m, n := s.mp>>res, s.np>>res
	a := w.a[:m*n]
	for i, f := range s.Bank.Phi[res] {
		a[i] = spec[i] * complex(f, 0)
	}
	cm, cn := subsample(w.b, a, m, n, 1<<(s.J-res))
	w.f.inverse(w.b[:cm*cn], cm, cn)
	k := 0
	for i := 1; i < cm-1; i++ {
		for j := 1; j < cn-1; j++ {
			out[k] = real(w.b[i*cn+j])
			k++
		}
	}
}

// subsample writes to dst the spectrum of the m×n signal with spectrum src subsampled by
// k on both axes: the mean of the k² aliases of each frequency (Kymatio's
// subsample_fourier). It returns the new size.
func subsample(dst, src []complex128, m, n, k int) (int, int) {
	cm, cn := m/k, n/k
	if k == 1 {
		copy(dst, src[:m*n])
		return m, n
	}
	d := dst[:cm*cn]
	clear(d)
	for i := 0; i < m; i++ {
		r := i % cm
		drow := d[r*cn : (r+1)*cn]
		for j0 := 0; j0 < n; j0 += cn {
			for j, v := range src[i*n+j0 : i*n+j0+cn] {
				drow[j] += v
			}
		}
	}
	s := complex(1/float64(k*k), 0)
	for i := range d {
		d[i] *= s
	}
	return cm, cn
}

// Reflect maps index i into [0, n) by mirror reflection without repeating the edge (numpy's
// and PyTorch's "reflect"), repeatedly for indices more than n away: the padding the
// transform applies before filtering. n ≥ 2.
func Reflect(i, n int) int {
	period := 2 * (n - 1)
	i %= period
	if i < 0 {
		i += period
	}
	if i >= n {
		i = period - i
	}
	return i
}
