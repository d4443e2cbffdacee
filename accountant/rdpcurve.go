package accountant

import (
	"fmt"
	"math"
)

// EpsilonFromRDP converts an RDP curve, rdp[i] being the Rényi DP at orders[i] of a
// mechanism or a composition (per-order sums add across compositions), into the smallest
// ε over the orders at which it is (ε, delta)-DP, by conv. It is the conversion every
// RDP Epsilon in this package ends with, for curves that come from elsewhere: a budget
// store adding the curves of many runs, a mechanism known only by its RDP (private
// hyperparameter tuning). An infinite rdp[i] makes order i useless, not the result
// infinite.
func EpsilonFromRDP(orders, rdp []float64, delta float64, conv Conversion) (Spent, error) {
	if len(orders) == 0 || len(orders) != len(rdp) {
		return Spent{}, fmt.Errorf("accountant: RDP curve of %d orders and %d values: want as many, at least one: %w", len(orders), len(rdp), ErrInvalidParameter)
	}
	for i, a := range orders {
		if err := checkOrder(a); err != nil {
			return Spent{}, err
		}
		if !(rdp[i] >= 0) {
			return Spent{}, fmt.Errorf("accountant: RDP %v at order %v: want a value ≥ 0: %w", rdp[i], a, ErrInvalidParameter)
		}
	}
	if err := checkDelta(delta); err != nil {
		return Spent{}, err
	}
	if !conv.valid() {
		return Spent{}, conv.invalidError()
	}
	s := epsilonFromRDP(orders, rdp, delta, conv)
	if math.IsNaN(s.Epsilon) {
		s.Epsilon = math.Inf(1)
	}
	return s, nil
}
