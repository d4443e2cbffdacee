package layers

import "github.com/privtrain/privtrain/internal/num"

// The per-example loops of GroupNorm on one NHWC image x of p positions × c channels
// (channel innermost). Every loop runs over contiguous channels with per-channel
// constants, so that a group of c/Groups channels costs no strided inner loop; the
// statistics of a group are the sums of its channels' sums. In float32 with AVX-512 or
// AVX2 + FMA and c a multiple of 8 they run as the kernels of groupnorm_amd64.s, which do
// the same arithmetic in the same order (TestGroupNormAssemblyMatchesGo and
// TestGroupNormKernelsMatchGo hold them bit for bit on every path).

// gnSums sets sa[j] = Σ_q a[q, j] and sab[j] = Σ_q a[q, j]·b[q, j] for each channel j,
// in float64: even positions and odd positions are summed apart and added at the end
// (the two accumulators of the assembly kernel). sa and sab hold at least 2c values; the
// second halves are scratch. With mask, a counts as 0 where mask ≤ 0 (or NaN): the
// gradient through a fused ReLU whose output is mask.
func gnSums[T num.Float](a, b, mask []T, p, c int, sa, sab []float64) {
	if a32, ok := any(a).([]float32); ok && useAVX2() && c%8 == 0 && p > 0 {
		b32 := any(b).([]float32)
		switch {
		case mask != nil && useAsm():
			gnSumsMasked32AVX512(&a32[0], &b32[0], &any(mask).([]float32)[0], &sa[0], &sab[0], p, c)
		case mask != nil:
			gnSumsMasked32AVX2(&a32[0], &b32[0], &any(mask).([]float32)[0], &sa[0], &sab[0], p, c)
		case useAsm():
			gnSums32AVX512(&a32[0], &b32[0], &sa[0], &sab[0], p, c)
		default:
			gnSums32AVX2(&a32[0], &b32[0], &sa[0], &sab[0], p, c)
		}
		return
	}
	clear(sa[:2*c])
	clear(sab[:2*c])
	for q := range p {
		off := (q & 1) * c
		ra, rb := a[q*c:(q+1)*c], b[q*c:(q+1)*c]
		ea, eab := sa[off:off+c], sab[off:off+c]
		var mr []T
		if mask != nil {
			mr = mask[q*c : (q+1)*c]
		}
		for j, v := range ra {
			if mr != nil && !(mr[j] > 0) {
				v = 0
			}
			x := float64(v)
			ea[j] += x
			// A product of two float32 values is exact in float64: fused or not, the
			// sum rounds once, as the assembly kernel's FMA.
			eab[j] += x * float64(rb[j])
		}
	}
	for j := range c {
		sa[j] += sa[c+j]
		sab[j] += sab[c+j]
	}
}

// gnCentered sets sq[j] = Σ_q (x[q, j] − mean[j])² (float64's second pass).
func gnCentered[T num.Float](x []T, p, c int, mean, sq []float64) {
	clear(sq[:c])
	for q := range p {
		for j, v := range x[q*c : (q+1)*c] {
			d := float64(v) - mean[j]
			sq[j] += d * d
		}
	}
}

// gnNormalize writes x̂ = (x − mean)·r (in float64, rounded once) and y = γ·x̂ + β (in T)
// with per-channel mean, r, γ and β; with relu, y = 0 where γ·x̂ + β < 0 (NaN passes).
func gnNormalize[T num.Float](x, xh, y []T, p, c int, mean, r []float64, gamma, beta []T, relu bool) {
	if x32, ok := any(x).([]float32); ok && useAVX2() && c%8 == 0 && p > 0 {
		xh32, y32 := any(xh).([]float32), any(y).([]float32)
		g32, b32 := any(gamma).([]float32), any(beta).([]float32)
		var f func(x, xh, y *float32, mean, r *float64, gamma, beta *float32, p, c int)
		switch {
		case relu && useAsm():
			f = gnNormReLU32AVX512
		case relu:
			f = gnNormReLU32AVX2
		case useAsm():
			f = gnNorm32AVX512
		default:
			f = gnNorm32AVX2
		}
		f(&x32[0], &xh32[0], &y32[0], &mean[0], &r[0], &g32[0], &b32[0], p, c)
		return
	}
	for q := range p {
		xr, hr, yr := x[q*c:(q+1)*c], xh[q*c:(q+1)*c], y[q*c:(q+1)*c]
		for j, v := range xr {
			h := T((float64(v) - mean[j]) * r[j])
			hr[j] = h
			o := T(gamma[j]*h) + beta[j] // the conversion forbids a fused multiply-add
			if relu && o < 0 {
				o = 0
			}
			yr[j] = o
		}
	}
}

// gnInputGrad writes dx = ((dy·g − mg) − x̂·mgx)·r, each step rounded in float64, with
// per-channel g (γ), mg, mgx and r; with mask, dy counts as 0 where mask ≤ 0 (or NaN).
func gnInputGrad[T num.Float](dy, xh, mask, dx []T, p, c int, g, mg, mgx, r []float64) {
	if dy32, ok := any(dy).([]float32); ok && useAVX2() && c%8 == 0 && p > 0 {
		xh32, dx32 := any(xh).([]float32), any(dx).([]float32)
		switch {
		case mask != nil && useAsm():
			gnGradMasked32AVX512(&dy32[0], &xh32[0], &any(mask).([]float32)[0], &dx32[0], &g[0], &mg[0], &mgx[0], &r[0], p, c)
		case mask != nil:
			gnGradMasked32AVX2(&dy32[0], &xh32[0], &any(mask).([]float32)[0], &dx32[0], &g[0], &mg[0], &mgx[0], &r[0], p, c)
		case useAsm():
			gnGrad32AVX512(&dy32[0], &xh32[0], &dx32[0], &g[0], &mg[0], &mgx[0], &r[0], p, c)
		default:
			gnGrad32AVX2(&dy32[0], &xh32[0], &dx32[0], &g[0], &mg[0], &mgx[0], &r[0], p, c)
		}
		return
	}
	for q := range p {
		dr, hr, xr := dy[q*c:(q+1)*c], xh[q*c:(q+1)*c], dx[q*c:(q+1)*c]
		var mr []T
		if mask != nil {
			mr = mask[q*c : (q+1)*c]
		}
		for j, v := range dr {
			if mr != nil && !(mr[j] > 0) {
				v = 0
			}
			t := float64(float64(v)*g[j]) - mg[j]
			t -= float64(float64(hr[j]) * mgx[j])
			xr[j] = T(t * r[j])
		}
	}
}
