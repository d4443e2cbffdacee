package accountant

import (
	"fmt"
	"strings"
)

// RDP is the Rényi DP accountant as an Accountant: the per-step RDP of every
// segment summed per order and converted to (ε, δ), exactly what a Ledger
// with these orders and conversion computes. The zero value uses
// DefaultOrders and the Balle conversion.
//
// It is an upper bound: each order's RDP is exact (Mironov, Talwar and Zhang
// 2019) and the conversion to (ε, δ) is a theorem, but the conversion loses
// tightness (typically 5–10 % in ε against the exact privacy loss
// distribution; see PLD).
type RDP struct {
	// Orders are the Rényi orders (nil: DefaultOrders).
	Orders []float64
	// Conversion from RDP to (ε, δ) (zero value: Balle).
	Conversion Conversion
	// GridRatio > 0 snaps, in histories with more than 32 distinct noise
	// multipliers (or sampling rates), every z down and every q up to the
	// geometric grid (1+GridRatio)^k before composing, so that steps merge
	// and an ADP-SGD schedule costs hundreds of RDP evaluations instead of
	// one per step. It over-states ε by at most about 2·GridRatio relative
	// (RDP scales like 1/z²); 0 keeps every step exact.
	GridRatio float64

	// composed, set by a Ledger asking about its own history, holds that
	// history's totals as the Ledger summed them while recording.
	composed *rdpSum
}

// Name returns "rdp".
func (RDP) Name() string { return "rdp" }

func (a RDP) cfg() (config, error) {
	c := newConfig(nil)
	if a.Orders != nil {
		WithOrders(a.Orders)(&c)
	}
	WithConversion(a.Conversion)(&c)
	if a.GridRatio < 0 {
		c.err = fmt.Errorf("accountant: RDP grid ratio %v: must be ≥ 0: %w", a.GridRatio, ErrInvalidParameter)
	}
	return c, c.err
}

// Description names the orders and the conversion.
func (a RDP) Description() string {
	c, err := a.cfg()
	if err != nil {
		return "RDP (invalid configuration)"
	}
	conv := map[Conversion]string{Balle: "Balle et al. 2020 conversion", Classic: "classic conversion (Mironov 2017)"}[c.conversion]
	var b strings.Builder
	fmt.Fprintf(&b, "RDP, %d orders up to %g, %s", len(c.orders), c.orders[len(c.orders)-1], conv)
	if a.GridRatio > 0 {
		fmt.Fprintf(&b, ", noise snapped down to a grid of ratio 1+%g", a.GridRatio)
	}
	return b.String()
}

// totals returns the summed RDP of history at the orders of c.
func (a RDP) totals(c config, history []Segment) []float64 {
	sum := newRDPSum(len(c.orders))
	for _, s := range mergeHistory(history, a.GridRatio) {
		sum.add(c.orders, s.Q, s.Z, s.Steps)
	}
	return sum.total
}

// Epsilon returns the ε of history at delta, with the optimal order.
func (a RDP) Epsilon(history []Segment, delta float64) (Spent, error) {
	return a.spend(history, checkDelta(delta), Spent{Delta: delta}, func(c config, total []float64) Spent {
		return epsilonFromRDP(c.orders, total, delta, c.conversion)
	})
}

// Delta returns the δ of history at eps, with the optimal order.
func (a RDP) Delta(history []Segment, eps float64) (Spent, error) {
	return a.spend(history, checkEpsilon(eps), Spent{Epsilon: eps}, func(c config, total []float64) Spent {
		return deltaFromRDP(c.orders, total, eps, c.conversion)
	})
}

// spend answers a query about history (argErr: the query's own argument check; none: what
// an empty history spends) by converting history's per-order totals: those a Ledger
// composed as it recorded history, or computed here.
func (a RDP) spend(history []Segment, argErr error, none Spent, convert func(config, []float64) Spent) (Spent, error) {
	c, err := a.cfg()
	if err != nil {
		return Spent{}, err
	}
	if argErr != nil {
		return Spent{}, argErr
	}
	if a.composed != nil {
		if a.composed.steps == 0 {
			return none, nil
		}
		return convert(c, a.composed.total), nil
	}
	steps, err := checkHistory(history)
	if err != nil {
		return Spent{}, err
	}
	if steps == 0 {
		return none, nil
	}
	return convert(c, a.totals(c, history)), nil
}

// rdpSum is the Rényi DP of a composition of subsampled Gaussian steps, per order: what
// RDP.totals computes for a history at once, and what a Ledger keeps as it records, so
// that a query after every step costs one pass over the orders, not one RDP evaluation
// per recorded segment.
type rdpSum struct {
	total []float64 // Σ steps·RDP per order
	steps int

	// per-step RDP of the most recent (q, z), so that a constant-noise training loop
	// adding one step at a time computes it once.
	lastQ, lastZ float64
	lastRDP      []float64
}

func newRDPSum(orders int) rdpSum { return rdpSum{total: make([]float64, orders)} }

// add composes steps steps of the subsampled Gaussian (q, z) at orders.
func (s *rdpSum) add(orders []float64, q, z float64, steps int) {
	if s.lastRDP == nil || q != s.lastQ || z != s.lastZ {
		if s.lastRDP == nil {
			s.lastRDP = make([]float64, len(orders))
		}
		sampledGaussianRDP(q, z, orders, s.lastRDP)
		s.lastQ, s.lastZ = q, z
	}
	fs := float64(steps)
	for i, r := range s.lastRDP {
		s.total[i] += fs * r
	}
	s.steps += steps
}

// CalibrateNoise is the package's CalibrateNoise with a's orders and conversion.
func (a RDP) CalibrateNoise(q float64, steps int, eps, delta float64) (float64, float64, error) {
	if _, err := a.cfg(); err != nil {
		return 0, 0, err
	}
	opts := []Option{WithConversion(a.Conversion)}
	if a.Orders != nil {
		opts = append(opts, WithOrders(a.Orders))
	}
	return CalibrateNoise(q, steps, eps, delta, opts...)
}
