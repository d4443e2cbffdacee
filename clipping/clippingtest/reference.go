package clippingtest

import (
	"math"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/internal/num"
	"gonum.org/v1/gonum/floats"
)

// BruteGradient is example i's gradient written out from the chain rule, loop by loop,
// one part per layer, from layers in the reference layout.
func BruteGradient[T num.Float](layers []Layer[T], i int) [][]float64 {
	out := make([][]float64, len(layers))
	for l, t := range layers {
		F, k := t.OutDim, t.InDim
		g := make([]float64, t.NumParams())
		switch t.Kind {
		case Dense:
			for a := range k {
				for o := range F {
					g[a*F+o] = float64(t.In[i*k+a]) * float64(t.GradZ[i*F+o])
				}
			}
			if t.Bias {
				for o := range F {
					g[k*F+o] = float64(t.GradZ[i*F+o])
				}
			}
		case Conv:
			P := t.Positions
			for f := range F {
				for j := range k {
					var s float64
					for p := range P {
						s += float64(t.GradZ[(i*F+f)*P+p]) * float64(t.In[(i*P+p)*k+j])
					}
					g[f*k+j] = s
				}
				if t.Bias {
					var s float64
					for p := range P {
						s += float64(t.GradZ[(i*F+f)*P+p])
					}
					g[F*k+f] = s
				}
			}
		}
		out[l] = g
	}
	return out
}

// ReferenceClippedSum applies the clipping rule of the seeds digest §0.4 to brute-force
// per-example gradients: each real example (mask nil: all) scaled by min(1, flat/‖g_i‖),
// or each layer's part by min(1, perLayer[l]/‖g_i,l‖) when perLayer is not nil, and
// summed; norms are the ‖g_i‖ (0 for padding). flat = +Inf is the plain sum.
func ReferenceClippedSum(layers []Layer[float64], batch int, mask []bool, perLayer []float64, flat float64) (sum, norms []float64) {
	return referenceGroupSum(layers, batch, 1, mask, perLayer, flat)
}

// referenceGroupSum is the augmentation-multiplicity rule written out from the chain rule:
// example i's gradient is the mean of the brute-force gradients of rows i·k … i·k+k−1,
// clipped as a whole (flat, or each layer's part for perLayer) and summed over the
// examples whose rows are real. With k = 1 it is ReferenceClippedSum.
func referenceGroupSum(taps []Layer[float64], batch, k int, mask []bool, perLayer []float64, flat float64) (sum, norms []float64) {
	n := batch / k
	norms = make([]float64, n)
	for i := range n {
		if mask != nil && !mask[i*k] {
			continue
		}
		var parts [][]float64
		for r := i * k; r < (i+1)*k; r++ {
			rp := BruteGradient(taps, r)
			if parts == nil {
				parts = make([][]float64, len(rp))
				for l := range rp {
					parts[l] = make([]float64, len(rp[l]))
				}
			}
			for l := range rp {
				for j, v := range rp[l] {
					parts[l][j] += v / float64(k) // exact for k = 1
				}
			}
		}
		g := slices.Concat(parts...)
		norms[i] = floats.Norm(g, 2)
		if perLayer == nil {
			c := math.Min(1, flat/norms[i])
			for j := range g {
				g[j] *= c
			}
		} else {
			g = nil
			for l, p := range parts {
				c := math.Min(1, perLayer[l]/floats.Norm(p, 2))
				for _, v := range p {
					g = append(g, c*v)
				}
			}
		}
		if sum == nil {
			sum = make([]float64, len(g))
		}
		for j := range g {
			sum[j] += g[j]
		}
	}
	if sum == nil {
		n := 0
		for _, t := range taps {
			n += t.NumParams()
		}
		sum = make([]float64, n)
	}
	return sum, norms
}

// layerParts cuts a flat gradient of layers into each layer's part.
func layerParts[T num.Float](layers []Layer[T], g []float64) [][]float64 {
	parts := make([][]float64, len(layers))
	for l, t := range layers {
		parts[l], g = g[:t.NumParams()], g[t.NumParams():]
	}
	return parts
}

// exactNorm is the L2 norm of x with a scaled, compensated sum: accurate to about one
// ulp of float64 — far below the float32 rounding the overshoot tests are about.
func exactNorm(x []float64) float64 {
	var m float64
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	if m == 0 {
		return 0
	}
	var s, c float64 // Kahan
	for _, v := range x {
		y := (v/m)*(v/m) - c
		t := s + y
		c = (t - s) - y
		s = t
	}
	return m * math.Sqrt(s)
}

// AssertClose fails t unless got and want have the same length and every entry of got
// is within rel·‖want‖ of want's (and not NaN).
func AssertClose(t *testing.T, what string, got, want []float64, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	scale := floats.Norm(want, 2)
	for j := range got {
		if d := math.Abs(got[j] - want[j]); d > rel*scale || math.IsNaN(got[j]) {
			t.Fatalf("%s[%d] = %v, want %v (|diff| %g > %g·‖want‖ = %g)", what, j, got[j], want[j], d, rel, rel*scale)
		}
	}
}

// oneRow is a mask with only row i real.
func oneRow(batch, i int) []bool {
	m := make([]bool, batch)
	m[i] = true
	return m
}

// groupMask marks the rows of the real examples of a batch of n examples of k rows.
func groupMask(k int, real []bool) []bool {
	m := make([]bool, 0, k*len(real))
	for _, r := range real {
		for range k {
			m = append(m, r)
		}
	}
	return m
}
