package accountant

import (
	"fmt"
	"math"
)

// Conversion selects how an RDP curve is turned into an (ε, δ) guarantee.
type Conversion int

const (
	// Balle is Theorem 21 of Balle et al., "Hypothesis testing
	// interpretations and Rényi differential privacy" (AISTATS 2020):
	// ε(α) = rdp(α) − (log δ + log α)/(α − 1) + log((α − 1)/α).
	// It is what Opacus and current TF Privacy use, and always at least as
	// tight as Classic.
	Balle Conversion = iota

	// Classic is Proposition 3 of Mironov, "Rényi differential privacy"
	// (2017), the conversion of the DP-LSSGD paper's Lemma 3 and of TF
	// Privacy before 2020: ε(α) = rdp(α) − log δ/(α − 1).
	Classic
)

var conversionNames = [...]string{Balle: "balle", Classic: "classic"}

// String returns "balle" or "classic".
func (c Conversion) String() string {
	if c < 0 || int(c) >= len(conversionNames) {
		return fmt.Sprintf("Conversion(%d)", int(c))
	}
	return conversionNames[c]
}

// ParseConversion parses "balle" or "classic".
func ParseConversion(s string) (Conversion, error) {
	for c, name := range conversionNames {
		if s == name {
			return Conversion(c), nil
		}
	}
	return 0, fmt.Errorf("accountant: unknown conversion %q (want balle or classic): %w", s, ErrInvalidParameter)
}

func (c Conversion) valid() bool { return c == Balle || c == Classic }

func (c Conversion) invalidError() error {
	return fmt.Errorf("accountant: unknown conversion %d: %w", int(c), ErrInvalidParameter)
}

// epsilonAt is ε(α) for total RDP r at order a and the given δ; logDelta = log δ.
func (c Conversion) epsilonAt(a, r, logDelta float64) float64 {
	if c == Classic {
		return r - logDelta/(a-1)
	}
	return r - (logDelta+math.Log(a))/(a-1) + math.Log1p(-1/a)
}

// logDeltaAt inverts epsilonAt: the log δ at which order a certifies ε.
func (c Conversion) logDeltaAt(a, r, eps float64) float64 {
	if c == Classic {
		return (a - 1) * (r - eps)
	}
	return (a-1)*(r-eps+math.Log1p(-1/a)) - math.Log(a)
}

// Spent is an (ε, δ) guarantee together with the Rényi order that gave it.
type Spent struct {
	Epsilon float64
	Delta   float64
	// Order is the minimising Rényi order (0 when nothing was recorded).
	Order float64
	// AtEdge is true when Order is the smallest or largest order of the
	// list; the true optimum may lie outside, so a wider list may give a
	// smaller ε (large orders help small ε, orders near 1 help large ε).
	AtEdge bool
}

// epsilonFromRDP minimises the conversion over orders. rdp[i] belongs to orders[i].
func epsilonFromRDP(orders, rdp []float64, delta float64, conv Conversion) Spent {
	logDelta := math.Log(delta)
	best, idx := math.Inf(1), 0
	for i, a := range orders {
		if e := conv.epsilonAt(a, rdp[i], logDelta); e < best {
			best, idx = e, i
		}
	}
	// (ε, δ)-DP with ε < 0 implies (0, δ)-DP.
	best = max(best, 0)
	return Spent{Epsilon: best, Delta: delta, Order: orders[idx], AtEdge: len(orders) > 1 && (idx == 0 || idx == len(orders)-1)}
}

// deltaFromRDP minimises the inverse conversion over orders.
func deltaFromRDP(orders, rdp []float64, eps float64, conv Conversion) Spent {
	best, idx := math.Inf(1), 0
	for i, a := range orders {
		if ld := conv.logDeltaAt(a, rdp[i], eps); ld < best {
			best, idx = ld, i
		}
	}
	return Spent{Epsilon: eps, Delta: min(math.Exp(best), 1), Order: orders[idx], AtEdge: len(orders) > 1 && (idx == 0 || idx == len(orders)-1)}
}
