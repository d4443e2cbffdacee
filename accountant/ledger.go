package accountant

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// Segment is a run of consecutive steps with the same sampling rate Q and
// noise multiplier Z, as recorded by Ledger.Record.
type Segment struct {
	Q, Z  float64
	Steps int
}

// Ledger composes the Rényi DP of a sequence of Poisson-subsampled Gaussian
// steps, which may differ in sampling rate and noise multiplier, and converts
// the total into (ε, δ). RDP composes by adding per order, so the ledger
// keeps one running total per order: Record costs one RDP evaluation (cached
// for repeated (q, z)), Epsilon and Delta cost one pass over the orders.
//
// The zero Ledger is ready to use with DefaultOrders and the Balle
// conversion. A Ledger is safe for concurrent use.
type Ledger struct {
	mu      sync.Mutex
	cfg     config
	ready   bool
	sum     rdpSum // the RDP totals, aligned with cfg.orders, and the step count
	history []Segment
}

// NewLedger returns an empty ledger configured by opts.
func NewLedger(opts ...Option) *Ledger {
	l := &Ledger{cfg: newConfig(opts)}
	l.ready = true
	l.sum = newRDPSum(len(l.cfg.orders))
	return l
}

// init makes the zero Ledger usable; callers hold l.mu.
func (l *Ledger) init() {
	if l.ready {
		return
	}
	l.cfg = newConfig(nil)
	l.sum = newRDPSum(len(l.cfg.orders))
	l.ready = true
}

// Record adds steps steps of the subsampled Gaussian mechanism with sampling
// rate q in (0, 1] and noise multiplier z > 0 (noise standard deviation over
// L2 sensitivity). On error the ledger is unchanged.
func (l *Ledger) Record(q, z float64, steps int) error {
	if err := checkMechanism(q, z); err != nil {
		return err
	}
	if steps < 1 {
		return fmt.Errorf("accountant: steps = %d: must be ≥ 1: %w", steps, ErrInvalidParameter)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if l.cfg.err != nil {
		return l.cfg.err
	}
	if l.sum.steps > math.MaxInt-steps {
		return fmt.Errorf("accountant: step count overflows int: %w", ErrInvalidParameter)
	}
	l.sum.add(l.cfg.orders, q, z, steps)
	if n := len(l.history); n > 0 && l.history[n-1].Q == q && l.history[n-1].Z == z {
		l.history[n-1].Steps += steps
	} else {
		l.history = append(l.history, Segment{Q: q, Z: z, Steps: steps})
	}
	return nil
}

// Epsilon returns the smallest ε such that everything recorded so far is
// (ε, δ)-DP, as the ledger's accountant certifies it (RDP: over the ledger's
// orders, with the order that attains it). An empty ledger spends ε = 0. ε is
// +Inf if no order gives a finite bound.
func (l *Ledger) Epsilon(delta float64) (Spent, error) {
	return l.ask(func(a Accountant, history []Segment) (Spent, error) { return a.Epsilon(history, delta) })
}

// Delta returns the smallest δ such that everything recorded so far is
// (ε, δ)-DP, as the ledger's accountant certifies it. An empty ledger spends
// δ = 0.
func (l *Ledger) Delta(eps float64) (Spent, error) {
	return l.ask(func(a Accountant, history []Segment) (Spent, error) { return a.Delta(history, eps) })
}

// ask puts query to the ledger's accountant about the recorded history. The
// RDP accountant is handed the totals summed in Record, so that asking after
// every step costs one pass over the orders however long the history.
func (l *Ledger) ask(query func(Accountant, []Segment) (Spent, error)) (Spent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if l.cfg.err != nil {
		return Spent{}, l.cfg.err
	}
	if l.cfg.acct != nil {
		return query(l.cfg.acct, slices.Clone(l.history))
	}
	return query(RDP{Orders: l.cfg.orders, Conversion: l.cfg.conversion, composed: &l.sum}, nil)
}

// Accountant returns the accountant that answers Epsilon and Delta: the one
// given by WithAccountant, or RDP with the ledger's orders and conversion.
func (l *Ledger) Accountant() Accountant {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	if l.cfg.acct != nil {
		return l.cfg.acct
	}
	return RDP{Orders: slices.Clone(l.cfg.orders), Conversion: l.cfg.conversion}
}

// Clone returns an independent copy of the ledger: configuration (accountant
// included), totals and history.
func (l *Ledger) Clone() *Ledger {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	c := &Ledger{cfg: l.cfg, ready: true}
	c.cfg.orders = slices.Clone(l.cfg.orders)
	c.sum = rdpSum{total: slices.Clone(l.sum.total), steps: l.sum.steps}
	c.history = slices.Clone(l.history)
	return c
}

// Steps returns the number of steps recorded.
func (l *Ledger) Steps() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sum.steps
}

// Orders returns a copy of the ledger's Rényi orders, ascending.
func (l *Ledger) Orders() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	return slices.Clone(l.cfg.orders)
}

// Conversion returns the ledger's RDP → (ε, δ) conversion.
func (l *Ledger) Conversion() Conversion {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	return l.cfg.conversion
}

// RDP returns a copy of the total Rényi DP per order, aligned with Orders.
func (l *Ledger) RDP() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	return slices.Clone(l.sum.total)
}

// History returns the recorded steps as segments, consecutive Record calls
// with equal (q, z) merged.
func (l *Ledger) History() []Segment {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.history)
}

func checkDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("accountant: δ = %v: must be in (0, 1): %w", delta, ErrInvalidParameter)
	}
	return nil
}

func checkEpsilon(eps float64) error {
	if !(eps > 0) || math.IsInf(eps, 1) {
		return fmt.Errorf("accountant: ε = %v: must be a finite number > 0: %w", eps, ErrInvalidParameter)
	}
	return nil
}
