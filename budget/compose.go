// Composition: the data set's runs' spends bounded together (RDP, PLD, basic
// composition), their default δ, and what of a resumed checkpoint's spend a ledger lacks.

package budget

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/privtrain/privtrain/accountant"
)

// Composition is the spend of a data set (or of one run): an upper bound Epsilon on ε at
// Delta, and the method that gave it.
type Composition struct {
	// Epsilon is +Inf when a spend is unbounded.
	Epsilon float64
	Delta   float64
	// Method says how ε was bounded: "rdp" (RDP curves added per order, Balle et al.
	// 2020 conversion), "pld" (privacy loss distribution of every segment), followed by
	// "+ basic composition of N (ε, δ) runs" when approx spends were added; "none"
	// when nothing was spent; "unbounded".
	Method string
}

// compositionOrders are the Rényi orders at which segment spends are evaluated when no
// RDP curve fixes them: DefaultOrders and the integers to 256, for small ε.
var compositionOrders = accountant.OrdersUpTo(256)

// Compose bounds the composition of spends at δ = delta: RDP curves and segments add per
// Rényi order and convert at δ' = delta − Σ δ_i of the approx spends; when no spend is a
// curve the PLD accountant composes the segments as well and the smaller ε is taken
// (both are upper bounds); approx spends add their ε (basic composition). delta must
// exceed the approx spends' Σ δ_i when any other spend is present. The PLD bound is
// computed when the segments hold at most 8 distinct (q, z) and the RDP ε is at most 20
// (its cost grows with both).
func Compose(spends []Spend, delta float64) (Composition, error) {
	return composeSpends(spends, delta, true)
}

// item is a run's effective spend and δ.
type item struct {
	spend Spend
	delta float64
}

func (l *ledger) items() []item {
	out := make([]item, 0, len(l.runs))
	for _, r := range l.runs {
		out = append(out, item{r.spend(), r.first.Delta})
	}
	return out
}

// defaultDelta is the δ at which a data set's spend is reported: the smallest δ of its
// runs whose spend is a curve or segments, plus the δ of its (ε, δ) runs.
func defaultDelta(items []item) float64 {
	d, approx := math.Inf(1), 0.0
	for _, it := range items {
		switch {
		case it.spend.Approx != nil:
			approx += it.spend.Approx.Delta
		case it.spend.Unbounded:
		case it.delta > 0:
			d = min(d, it.delta)
		}
	}
	if math.IsInf(d, 1) {
		d = 0
	}
	return d + approx
}

func compose(items []item, delta float64) (Composition, error) {
	return composeItems(items, delta, true)
}

// composeItems composes items at delta (0: their default δ), with or without the PLD bound.
func composeItems(items []item, delta float64, withPLD bool) (Composition, error) {
	if delta == 0 {
		delta = defaultDelta(items)
	}
	spends := make([]Spend, len(items))
	for i, it := range items {
		spends[i] = it.spend
	}
	return composeSpends(spends, delta, withPLD)
}

// composeSpends is Compose, with the PLD bound only when withPLD: the RDP bound alone is
// an upper bound too, and costs milliseconds where the PLD costs up to seconds.
func composeSpends(spends []Spend, delta float64, withPLD bool) (Composition, error) {
	var segs []accountant.Segment
	var curves []*Curve
	approxEps, approxDelta, nApprox := 0.0, 0.0, 0
	for i, s := range spends {
		if err := s.Validate(); err != nil {
			return Composition{}, fmt.Errorf("spend %d: %w", i, err)
		}
		switch {
		case s.Unbounded:
			return Composition{Epsilon: math.Inf(1), Delta: delta, Method: "unbounded"}, nil
		case s.isSegments():
			segs = append(segs, s.Segments...)
		case s.RDP != nil:
			curves = append(curves, s.RDP)
		case s.Approx != nil:
			approxEps += s.Approx.Epsilon
			approxDelta += s.Approx.Delta
			nApprox++
		}
	}
	basic := ""
	if nApprox > 0 {
		basic = fmt.Sprintf(" + basic composition of %d (ε, δ) run%s", nApprox, plural(nApprox))
	}
	if len(segs) == 0 && len(curves) == 0 {
		if nApprox == 0 {
			return Composition{Delta: delta, Method: "none"}, nil
		}
		if delta < approxDelta {
			return Composition{}, fmt.Errorf("budget: δ = %v is below the Σ δ = %v of the (ε, δ) runs", delta, approxDelta)
		}
		return Composition{Epsilon: approxEps, Delta: delta, Method: "basic composition" + strings.TrimPrefix(basic, " + basic composition")}, nil
	}
	rest := delta - approxDelta
	if !(rest > 0 && rest < 1) {
		return Composition{}, fmt.Errorf("budget: δ = %v leaves no δ for the RDP and PLD composition after the Σ δ = %v of the (ε, δ) runs: ask at a larger δ", delta, approxDelta)
	}
	orders, err := commonOrders(curves)
	if err != nil {
		return Composition{}, err
	}
	mechs, err := mechanisms(segs)
	if err != nil {
		return Composition{}, err
	}
	total := make([]float64, len(orders))
	for _, g := range mechs {
		r, err := accountant.SampledGaussianRDP(g.Q, g.Z, orders)
		if err != nil {
			return Composition{}, err
		}
		for i := range total {
			total[i] += float64(g.Steps) * r[i]
		}
	}
	for _, c := range curves {
		for i, a := range orders {
			j, _ := slices.BinarySearch(c.Orders, a)
			total[i] += c.Values[j]
		}
	}
	spent, err := accountant.EpsilonFromRDP(orders, total, rest, accountant.Balle)
	if err != nil {
		return Composition{}, err
	}
	eps, method := spent.Epsilon, "rdp"
	if len(curves) == 0 && withPLD && pldAffordable(mechs, eps) {
		pld, err := accountant.PLD{}.Epsilon(mechs, rest)
		if err != nil {
			return Composition{}, err
		}
		if pld.Epsilon < eps {
			eps, method = pld.Epsilon, "pld"
		}
	}
	return Composition{Epsilon: eps + approxEps, Delta: delta, Method: method + basic}, nil
}

// The PLD bound costs an FFT composition per distinct (q, z), the longer the larger ε:
// from tenths of a second to seconds each on one core. It is computed where it is
// affordable and matters; elsewhere the RDP bound, an upper bound too, is reported alone
// (and the method says "rdp").
const (
	pldMaxMechanisms = 8  // distinct (q, z) of the data set's steps
	pldMaxEpsilon    = 20 // ε by RDP: beyond it a tighter bound changes no decision
)

func pldAffordable(segs []accountant.Segment, rdpEps float64) bool {
	if !(rdpEps <= pldMaxEpsilon) {
		return false
	}
	seen := map[[2]float64]bool{}
	for _, g := range segs {
		seen[[2]float64{g.Q, g.Z}] = true
	}
	return len(seen) <= pldMaxMechanisms
}

// ErrTooComplex reports steps of more distinct (q, z) than a composition evaluates
// (MaxMechanisms, after rounding): a ledger no run of privtrain writes, refused in
// bounded time.
var ErrTooComplex = errors.New("budget: too many distinct (q, z) step mechanisms to compose")

// The composition's cost grows with the distinct (q, z) of the steps: the RDP of each
// is evaluated at every order (about a millisecond each on one core). Above
// roundAbove distinct mechanisms, q is rounded up and z down to the grid (1+r)^k, r =
// 10⁻³, then 10⁻² if that is not enough: a larger q and a smaller z only increase a
// step's privacy loss, so the bound stays an upper bound, larger by about r relative at
// most (ε of the subsampled Gaussian grows at most like q and like 1/z). More than
// MaxMechanisms left after that is refused (ErrTooComplex): a long ADP-SGD schedule, one
// z per step, rounds to a few hundred.
const (
	roundAbove    = 64
	MaxMechanisms = 1000
)

// roundingRatios are the grids tried in turn: the first above roundAbove distinct
// mechanisms, the second above MaxMechanisms.
var roundingRatios = [2]float64{1e-3, 1e-2}

// mechanisms are the distinct (q, z) of segs with their steps (mergeSegments), rounded
// as above when there are more than roundAbove of them.
func mechanisms(segs []accountant.Segment) ([]accountant.Segment, error) {
	out := mergeSegments(segs)
	if len(out) > roundAbove {
		out = mergeSegments(roundSegments(out, roundingRatios[0]))
	}
	if len(out) > MaxMechanisms {
		out = mergeSegments(roundSegments(out, roundingRatios[1]))
	}
	if len(out) > MaxMechanisms {
		return nil, fmt.Errorf("%w: %d after rounding q up and z down by %g %%, at most %d", ErrTooComplex, len(out), 100*roundingRatios[1], MaxMechanisms)
	}
	return out, nil
}

// roundSegments rounds each q up and each z down to the grid (1+r)^k (q at most 1).
func roundSegments(segs []accountant.Segment, r float64) []accountant.Segment {
	lr := math.Log1p(r)
	out := make([]accountant.Segment, len(segs))
	for i, g := range segs {
		q := math.Exp(math.Ceil(math.Log(g.Q)/lr) * lr)
		for q < g.Q {
			q *= 1 + r
		}
		z := math.Exp(math.Floor(math.Log(g.Z)/lr) * lr)
		for z > g.Z {
			z /= 1 + r
		}
		if !(z > 0) { // z below the smallest float64 of the grid: keep it exact
			z = g.Z
		}
		out[i] = accountant.Segment{Q: min(q, 1), Z: z, Steps: g.Steps}
	}
	return out
}

// mergeSegments counts the steps of each distinct (q, z), in order of first appearance:
// composition commutes, so this is exact, and the RDP of a mechanism is evaluated once
// however many runs repeat it.
func mergeSegments(segs []accountant.Segment) []accountant.Segment {
	idx := map[[2]float64]int{}
	var out []accountant.Segment
	for _, g := range segs {
		k := [2]float64{g.Q, g.Z}
		if i, ok := idx[k]; ok {
			out[i].Steps += g.Steps
			continue
		}
		idx[k] = len(out)
		out = append(out, g)
	}
	return out
}

// commonOrders returns the orders at which every curve is given (compositionOrders when
// there is none).
func commonOrders(curves []*Curve) ([]float64, error) {
	if len(curves) == 0 {
		return compositionOrders, nil
	}
	orders := slices.Clone(curves[0].Orders)
	for _, c := range curves[1:] {
		orders = slices.DeleteFunc(orders, func(a float64) bool {
			_, ok := slices.BinarySearch(c.Orders, a)
			return !ok
		})
	}
	if len(orders) == 0 {
		return nil, errors.New("budget: the RDP curves of the data set's runs share no Rényi order: they cannot be added")
	}
	return orders, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// unheld is the part of a resumed checkpoint's ledger (inherited, of lineage run) that
// the ledger does not hold, nil when it holds all of it. For segments: per (q, z), the
// steps of inherited beyond those that the entries of the lineage count (settled at their
// commit, unsettled at their reservation, imports), so that the data set's steps of the
// lineage include every step of the checkpoint's ledger however the lineage travelled
// between stores: composition only grows with more steps, so the data set's ε is then
// at least the ε of that ledger. Other forms (a non-private lineage): all of inherited,
// when no entry of the lineage has that form.
func (l *ledger) unheld(run string, inherited Spend) *Spend {
	if !inherited.isSegments() {
		for _, r := range l.runs {
			if sp := r.spend(); r.first.Lineage == run && !sp.isSegments() {
				return nil
			}
		}
		return &inherited
	}
	held := map[[2]float64]int{}
	for _, r := range l.runs {
		if sp := r.spend(); r.first.Lineage == run && sp.isSegments() {
			for _, g := range sp.Segments {
				held[[2]float64{g.Q, g.Z}] += g.Steps
			}
		}
	}
	var missing Segments
	for _, g := range inherited.Segments {
		k := [2]float64{g.Q, g.Z}
		take := min(held[k], g.Steps)
		held[k] -= take
		if g.Steps > take {
			missing = append(missing, accountant.Segment{Q: g.Q, Z: g.Z, Steps: g.Steps - take})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sp := SegmentSpend(inherited.Accountant, missing)
	return &sp
}
