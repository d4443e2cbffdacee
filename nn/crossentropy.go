package nn

import (
	"math"

	"github.com/privtrain/privtrain/internal/num"
)

// The softmax cross-entropy as plain arithmetic on rows of logits, apart from its Gorgonia
// op (loss.go): the op computes through crossEntropy and crossEntropyGrad, the native
// engine through labelCrossEntropy, the same arithmetic for a one-hot target. The focal
// loss is focal.go's.

// logSumExp is log Σ_k exp(z_k), shifted by the row maximum.
func logSumExp[T num.Float](z []T) (lse, m float64) {
	m = math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range z {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s), m
}

// crossEntropy is Σ_i Σ_k t_ik·(lse(z_i) − z_ik), skipping rows whose targets are all zero.
func crossEntropy[T num.Float](z, t []T, k int) float64 {
	var loss float64
	for r := 0; r+k <= len(z); r += k {
		zr, tr := z[r:r+k], t[r:r+k]
		var mass float64
		for _, v := range tr {
			mass += float64(v)
		}
		if mass == 0 {
			continue
		}
		lse, _ := logSumExp(zr)
		for j, v := range tr {
			if v != 0 {
				loss += float64(v) * (lse - float64(zr[j]))
			}
		}
	}
	return loss
}

func crossEntropyGrad[T num.Float](dz, z, t []T, k int, g float64) {
	for r := 0; r+k <= len(z); r += k {
		zr, tr, dr := z[r:r+k], t[r:r+k], dz[r:r+k]
		var mass float64
		for _, v := range tr {
			mass += float64(v)
		}
		if mass == 0 {
			clear(dr) // padding rows: exactly zero
			continue
		}
		lse, _ := logSumExp(zr)
		for j := range zr {
			dr[j] = T(g * (mass*math.Exp(float64(zr[j])-lse) - float64(tr[j])))
		}
	}
}

// labelCrossEntropy is the loss lse(z) − z_label of one row of logits, and with dz != nil
// its gradient softmax(z) − e_label: the same arithmetic as softmaxCrossEntropy for a
// one-hot target.
func labelCrossEntropy[T num.Float](z []T, label int, dz []T) float64 {
	lse, _ := logSumExp(z)
	if dz != nil {
		for j, v := range z {
			p := math.Exp(float64(v) - lse)
			if j == label {
				p--
			}
			dz[j] = T(p)
		}
	}
	return lse - float64(z[label])
}
