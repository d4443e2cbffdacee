package dpoptim

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
)

// CalibrateSchedule returns the smallest base noise multiplier z (to the accountant's
// relative tolerance of 1e-4) such that steps private steps at sampling rate q, step t
// with noise multiplier z·scaler.NoiseScale(t), are (eps, delta)-DP by the accountant's
// RDP ledger with opts, and the ε achieved at that z. A [Private] step wrapping the same
// scaler (an ADP-SGD rule) with NoiseMultiplier z records exactly these multipliers.
//
// Each trial z composes the whole schedule in a fresh ledger (one RDP evaluation per step
// whose multiplier differs from the previous one), so the cost grows with steps times the
// ~20–40 bisection trials.
func CalibrateSchedule(scaler NoiseScaler, q float64, steps int, eps, delta float64, opts ...accountant.Option) (z, achievedEps float64, err error) {
	if scaler == nil {
		return 0, 0, fmt.Errorf("%w: nil noise schedule", ErrConfig)
	}
	if steps < 1 {
		return 0, 0, fmt.Errorf("%w: steps = %d, want ≥ 1", ErrConfig, steps)
	}
	if !(q > 0 && q <= 1) {
		return 0, 0, fmt.Errorf("%w: sampling rate q = %v, want q in (0, 1]", ErrConfig, q)
	}
	scales := make([]float64, steps)
	for t := range scales {
		s := scaler.NoiseScale(t)
		if !(s > 0) || math.IsInf(s, 0) {
			return 0, 0, fmt.Errorf("%w: noise scale %v at step %d, want a finite scale > 0", ErrConfig, s, t)
		}
		scales[t] = s
	}
	epsilonOf := func(z float64) (float64, error) {
		ledger := accountant.NewLedger(opts...)
		// Runs of equal multipliers are recorded at once; z*scale is the same
		// expression Private.multiplier evaluates, so the ledgers agree exactly.
		for t := 0; t < steps; {
			zt, run := z*scales[t], 1
			for t+run < steps && z*scales[t+run] == zt {
				run++
			}
			if err := ledger.Record(q, zt, run); err != nil {
				return 0, err
			}
			t += run
		}
		spent, err := ledger.Epsilon(delta)
		return spent.Epsilon, err
	}
	return accountant.Calibrate(eps, epsilonOf)
}
