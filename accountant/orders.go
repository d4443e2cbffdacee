package accountant

import (
	"fmt"
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

// MaxOrder is the largest Rényi order accepted. Evaluating the RDP at order
// α costs O(α) terms; useful orders stay far below this.
const MaxOrder = 1 << 20

// checkOrder reports an order outside (1, MaxOrder].
func checkOrder(a float64) error {
	if !(a > 1 && a <= MaxOrder) {
		return fmt.Errorf("accountant: Rényi order %v: must be in (1, %d]: %w", a, MaxOrder, ErrInvalidParameter)
	}
	return nil
}

// checkOrders returns a sorted, duplicate-free copy of orders, or an error if
// one is outside (1, MaxOrder].
func checkOrders(orders []float64) ([]float64, error) {
	if len(orders) == 0 {
		return nil, fmt.Errorf("accountant: empty order list: %w", ErrInvalidParameter)
	}
	out := slices.Clone(orders)
	for _, a := range out {
		if err := checkOrder(a); err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
