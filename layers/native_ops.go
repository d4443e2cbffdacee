package layers

import (
	"github.com/privtrain/privtrain/internal/gemm"
	"github.com/privtrain/privtrain/internal/num"
)

// tanhInPlace replaces every value by its hyperbolic tangent: float32 on internal/gemm's
// vectorised kernel (a few ulps from the correctly rounded value), float64 by math.Tanh.
func tanhInPlace[T num.Float](x []T) {
	gemm.Tanh(x, x)
}

// activationGrad writes dz = g ⊙ act'(y) from the activation's output y: ReLU passes g
// where y > 0, Tanh multiplies by 1 − y² (vectorised for float32 in internal/gemm).
func activationGrad[T num.Float](f actFunc, dz, g, y []T) {
	switch f {
	case actNone:
		if len(dz) > 0 && &dz[0] == &g[0] {
			return // the op below wrote it in place (Native.gradTarget)
		}
		copy(dz, g)
	case actReLU:
		if y32, ok := any(y).([]float32); ok && len(y32) > 0 {
			if f, ok := kernel(reluGrad32AVX, reluGrad32AVX2, reluGrad32NEON); ok {
				dz32, g32 := any(dz).([]float32), any(g).([]float32)
				_, _ = dz32[len(y32)-1], g32[len(y32)-1]
				f(&dz32[0], &g32[0], &y32[0], len(y32))
				return
			}
		}
		for j, v := range y {
			if v > 0 {
				dz[j] = g[j]
			} else {
				dz[j] = 0
			}
		}
	case actTanh:
		gemm.TanhGrad(dz, g, y)
	}
}
