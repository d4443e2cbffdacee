package accountant

import (
	"fmt"
	"math"
	"slices"
)

// DefaultOrders returns the 151 Rényi orders used by TF Privacy and Opacus:
// 1.1, 1.2, …, 10.9, then 12, 13, …, 63. They suffice for ε between about
// 0.2 and 50 at δ = 1e-5; smaller ε need larger orders (see OrdersUpTo).
func DefaultOrders() []float64 {
	orders := make([]float64, 0, 151)
	for x := 1; x < 100; x++ {
		orders = append(orders, 1+float64(x)/10)
	}
	for a := 12; a <= 63; a++ {
		orders = append(orders, float64(a))
	}
	return orders
}

// OrdersUpTo returns DefaultOrders extended by the integer orders 64, 65, …,
// maxOrder. Large orders are what a small ε (say below 0.3) needs; 256 or
// 1024 are common choices. A maxOrder below 64 returns DefaultOrders.
func OrdersUpTo(maxOrder int) []float64 {
	orders := DefaultOrders()
	for a := 64; a <= maxOrder; a++ {
		orders = append(orders, float64(a))
	}
	return orders
}

// checkOrders returns a sorted, duplicate-free copy of orders, or an error if
// one is not a finite number greater than 1.
func checkOrders(orders []float64) ([]float64, error) {
	if len(orders) == 0 {
		return nil, fmt.Errorf("accountant: empty order list: %w", ErrInvalidParameter)
	}
	out := slices.Clone(orders)
	for _, a := range out {
		if !(a > 1) || math.IsInf(a, 1) {
			return nil, fmt.Errorf("accountant: Rényi order %v: must be a finite number > 1: %w", a, ErrInvalidParameter)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
