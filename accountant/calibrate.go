package accountant

import (
	"fmt"
	"math"
)

// calibrationTolerance is the relative width of the final bisection bracket:
// the returned z meets the target and z·(1 − calibrationTolerance) does not.
const calibrationTolerance = 1e-4

// bracketLimit bounds the doubling/halving search for a bracket to
// z in [2^−bracketLimit, 2^bracketLimit].
const bracketLimit = 64

// Calibrate finds, by bisection, the smallest scale z > 0 whose ε,
// epsilonOf(z), is at most eps, for a schedule whose ε decreases as z grows
// (a noise multiplier, or the common factor of a noise schedule). It returns
// z to a relative tolerance of 1e-4, meaning z·(1 − 1e-4) misses the target,
// and the ε achieved at z (≤ eps). Errors of epsilonOf are returned wrapped;
// a target not met for any z up to 2^64 gives ErrUnreachable, and so does a
// target met already at z = 2^−64 (then the budget does not constrain z).
func Calibrate(eps float64, epsilonOf func(z float64) (float64, error)) (z, achievedEps float64, err error) {
	if err := checkEpsilon(eps); err != nil {
		return 0, 0, err
	}
	eval := func(z float64) (float64, error) {
		e, err := epsilonOf(z)
		if err != nil {
			return 0, fmt.Errorf("accountant: calibration at z = %g: %w", z, err)
		}
		if math.IsNaN(e) {
			return 0, fmt.Errorf("accountant: calibration at z = %g: ε is NaN: %w", z, ErrInvalidParameter)
		}
		return e, nil
	}
	// Bracket: lo misses the target, hi meets it.
	lo, hi := 1.0, 1.0
	hiEps, err := eval(hi)
	if err != nil {
		return 0, 0, err
	}
	if hiEps <= eps {
		for k := 0; ; k++ {
			if k == bracketLimit {
				return 0, 0, fmt.Errorf("accountant: target ε = %g is met even at z = %g; the budget does not constrain the noise: %w", eps, lo, ErrUnreachable)
			}
			lo /= 2
			e, err := eval(lo)
			if err != nil {
				return 0, 0, err
			}
			if e > eps {
				break
			}
			hi, hiEps = lo, e
		}
	} else {
		for k := 0; ; k++ {
			if k == bracketLimit {
				return 0, 0, fmt.Errorf("accountant: target ε = %g not met even at z = %g (ε = %g): %w", eps, hi, hiEps, ErrUnreachable)
			}
			lo = hi
			hi *= 2
			if hiEps, err = eval(hi); err != nil {
				return 0, 0, err
			}
			if hiEps <= eps {
				break
			}
		}
	}
	// Bisect until hi − lo ≤ tol·hi/2, so hi·(1 − tol) < lo: it misses.
	for hi-lo > 0.5*calibrationTolerance*hi {
		mid := math.Sqrt(lo * hi) // geometric: the bracket spans a factor of 2
		e, err := eval(mid)
		if err != nil {
			return 0, 0, err
		}
		if e <= eps {
			hi, hiEps = mid, e
		} else {
			lo = mid
		}
	}
	return hi, hiEps, nil
}

// CalibrateNoise returns the smallest noise multiplier z (to a relative
// tolerance of 1e-4) for which steps steps of the Poisson-subsampled Gaussian
// mechanism with sampling rate q are (eps, delta)-DP, and the ε achieved at
// that z. Options select the orders and conversion as for NewLedger. If eps
// lies below what the orders can certify however large the noise, the error
// wraps ErrUnreachable and suggests larger orders. With WithAccountant(a) for
// a non-RDP a, it is a.CalibrateNoise.
func CalibrateNoise(q float64, steps int, eps, delta float64, opts ...Option) (z, achievedEps float64, err error) {
	if err := checkCalibration(q, steps, eps, delta); err != nil {
		return 0, 0, err
	}
	cfg := newConfig(opts)
	if cfg.err != nil {
		return 0, 0, cfg.err
	}
	if cfg.acct != nil {
		return cfg.acct.CalibrateNoise(q, steps, eps, delta)
	}
	// As z → ∞ the RDP vanishes and ε tends to this floor.
	floor := epsilonFromRDP(cfg.orders, make([]float64, len(cfg.orders)), delta, cfg.conversion)
	if eps <= floor.Epsilon {
		return 0, 0, fmt.Errorf("accountant: target ε = %g is at or below %.4g, the least ε that orders up to %g can certify at δ = %g however large the noise; extend the orders (e.g. WithOrders(OrdersUpTo(1024))): %w",
			eps, floor.Epsilon, cfg.orders[len(cfg.orders)-1], delta, ErrUnreachable)
	}
	rdp := make([]float64, len(cfg.orders))
	epsilonOf := func(z float64) (float64, error) {
		sampledGaussianRDP(q, z, cfg.orders, rdp)
		fs := float64(steps)
		for i := range rdp {
			rdp[i] *= fs
		}
		return epsilonFromRDP(cfg.orders, rdp, delta, cfg.conversion).Epsilon, nil
	}
	return Calibrate(eps, epsilonOf)
}

// checkCalibration validates the arguments of a CalibrateNoise: a constant
// plan of steps ≥ 1 steps at sampling rate q, and a target (eps, delta).
func checkCalibration(q float64, steps int, eps, delta float64) error {
	if err := checkMechanism(q, 1); err != nil {
		return err
	}
	if steps < 1 {
		return fmt.Errorf("accountant: steps = %d: must be ≥ 1: %w", steps, ErrInvalidParameter)
	}
	if err := checkEpsilon(eps); err != nil {
		return err
	}
	return checkDelta(delta)
}
