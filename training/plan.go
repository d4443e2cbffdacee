package training

import (
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/dpoptim"
)

// cloneLedger copies a ledger: with opts nil, an exact copy (its accountant included);
// otherwise through its JSON form into a ledger made with opts, which then reads the same
// history with opts' accountant. nil gives a fresh ledger with opts.
func cloneLedger(l *accountant.Ledger, opts []accountant.Option) (*accountant.Ledger, error) {
	if l != nil && opts == nil {
		return l.Clone(), nil
	}
	c := accountant.NewLedger(opts...)
	if l == nil {
		return c, nil
	}
	b, err := l.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if err := c.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return c, nil
}

// planSpent returns what a ledger holding start (nil: empty) spends at delta after the
// steps from…to−1 are recorded one at a time, as the private optimizer records them.
func planSpent(start *accountant.Ledger, opts []accountant.Option, q, z float64, scaler dpoptim.NoiseScaler, from, to int, delta float64) (accountant.Spent, error) {
	l, err := cloneLedger(start, opts)
	if err != nil {
		return accountant.Spent{}, err
	}
	for t := from; t < to; t++ {
		if err := l.Record(q, dpoptim.StepMultiplier(z, scaler, t), 1); err != nil {
			return accountant.Spent{}, err
		}
	}
	return l.Epsilon(delta)
}

// calibrate returns the smallest noise multiplier for which a plan of steps steps spends at
// most target at delta. The accountant's calibration composes runs of equal steps in one
// Record call; the run records them one at a time, which can differ in the last bits, so z
// is nudged up until the step-by-step ledger is within budget too.
func calibrate(opts []accountant.Option, q float64, scaler dpoptim.NoiseScaler, steps int, target, delta float64) (float64, accountant.Spent, error) {
	var z float64
	var err error
	if scaler != nil {
		z, _, err = dpoptim.CalibrateSchedule(scaler, q, steps, target, delta, opts...)
	} else {
		z, _, err = accountant.CalibrateNoise(q, steps, target, delta, opts...)
	}
	if err != nil {
		return 0, accountant.Spent{}, err
	}
	for range 64 {
		spent, err := planSpent(nil, opts, q, z, scaler, 0, steps, delta)
		if err != nil {
			return 0, accountant.Spent{}, err
		}
		if spent.Epsilon <= target {
			return z, spent, nil
		}
		z = math.Nextafter(z*(1+1e-12), math.Inf(1))
	}
	return 0, accountant.Spent{}, fmt.Errorf("%w: the noise calibrated for ε = %v exceeds it when the steps are recorded one by one", accountant.ErrUnreachable, target)
}
