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
	total := make([]float64, len(c.orders))
	r := make([]float64, len(c.orders))
	for _, s := range mergeHistory(history, a.GridRatio) {
		sampledGaussianRDP(s.Q, s.Z, c.orders, r)
		fs := float64(s.Steps)
		for i := range r {
			total[i] += fs * r[i]
		}
	}
	return total
}

// Epsilon returns the ε of history at delta, with the optimal order.
func (a RDP) Epsilon(history []Segment, delta float64) (Spent, error) {
	c, err := a.cfg()
	if err != nil {
		return Spent{}, err
	}
	if err := checkDelta(delta); err != nil {
		return Spent{}, err
	}
	steps, err := checkHistory(history)
	if err != nil {
		return Spent{}, err
	}
	if steps == 0 {
		return Spent{Delta: delta}, nil
	}
	return epsilonFromRDP(c.orders, a.totals(c, history), delta, c.conversion), nil
}

// Delta returns the δ of history at eps, with the optimal order.
func (a RDP) Delta(history []Segment, eps float64) (Spent, error) {
	c, err := a.cfg()
	if err != nil {
		return Spent{}, err
	}
	if err := checkEpsilon(eps); err != nil {
		return Spent{}, err
	}
	steps, err := checkHistory(history)
	if err != nil {
		return Spent{}, err
	}
	if steps == 0 {
		return Spent{Epsilon: eps}, nil
	}
	return deltaFromRDP(c.orders, a.totals(c, history), eps, c.conversion), nil
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
