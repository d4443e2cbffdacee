package accountant

import (
	"container/heap"
	"fmt"
	"math"
	"strings"
	"sync"
)

// PLD is the privacy-loss-distribution accountant of the Poisson-subsampled
// Gaussian mechanism (add/remove adjacency), after Koskela, Jälkö and Honkela
// (2020) and Google's dp_accounting: the privacy loss distribution of each
// step is discretised pessimistically on a grid of width Discretisation
// ("connect the dots", Doroshenko et al. 2022: the discrete PLD's δ(ε) equals
// the exact one at every grid point and lies above it between them), steps
// are composed by FFT (a repeated step by a power in the frequency domain),
// the mass truncated from the upper tails is added to δ and the lower tails
// are moved up. Both directions (removing and adding a record) are composed
// and ε is the larger. The result is an upper bound on the exact ε of the
// mechanism, up to floating-point round-off in the FFT (about 1e-12 relative;
// twice the negative round-off values, of order 1e-13, are added to δ as an
// estimated allowance, where dp_accounting keeps none; this is not a proven
// bound), and is typically within 0.1 % of it at the default
// discretisation: about 8 % below the RDP accountant on the TF Privacy MNIST
// plan.
//
// Privacy losses so large that a grid would exceed 4M points (ε far above
// 10) are composed on a grid of twice the width, as often as needed: the
// result stays an upper bound, only looser.
//
// The zero value uses the defaults. PLD is safe for concurrent use.
type PLD struct {
	// Discretisation is the grid width Δ of the privacy loss (default 1e-4).
	Discretisation float64
	// TailMass is the mass truncated per step and per composition from each
	// tail (default 1e-15); what is cut from the upper tails adds to δ.
	TailMass float64
	// MergeTolerance: in histories with more than 32 distinct noise
	// multipliers, such as ADP-SGD's, steps with nearby z are merged by
	// snapping z down to the smallest of its group (pessimistic), with groups
	// chosen so that the Gaussian-DP μ of the whole history (about
	// proportional to ε) rises by at most MergeTolerance relative (default
	// 2e-3: ε over-stated by about 0.2 % or less; 0.03 % on the 11,700-step
	// ADP-SGD schedule of BenchmarkPLDADPSchedule, which it composes in
	// about 3.4 s instead of 4.6 s at 1e-3); more than 32 distinct
	// sampling rates are snapped up to the grid (1+MergeTolerance)^k.
	// Negative: never merge (one PLD per distinct step: slow).
	MergeTolerance float64
}

// Defaults of PLD.
const (
	DefaultPLDDiscretisation = 1e-4
	DefaultPLDTailMass       = 1e-15
	DefaultPLDMergeTolerance = 2e-3
)

// Name returns "pld".
func (PLD) Name() string { return "pld" }

func (a PLD) params() (d, tail, ratio float64, err error) {
	d, tail, ratio = a.Discretisation, a.TailMass, a.MergeTolerance
	if d == 0 {
		d = DefaultPLDDiscretisation
	}
	if tail == 0 {
		tail = DefaultPLDTailMass
	}
	if ratio == 0 {
		ratio = DefaultPLDMergeTolerance
	}
	if !(d >= 1e-7 && d <= 0.1) {
		return 0, 0, 0, fmt.Errorf("accountant: PLD discretisation %v: must be in [1e-7, 0.1]: %w", d, ErrInvalidParameter)
	}
	if !(tail >= 1e-300 && tail <= 1e-6) {
		return 0, 0, 0, fmt.Errorf("accountant: PLD tail mass %v: must be in [1e-300, 1e-6]: %w", tail, ErrInvalidParameter)
	}
	if math.IsNaN(ratio) || ratio > 0.1 {
		return 0, 0, 0, fmt.Errorf("accountant: PLD merge tolerance %v: must be at most 0.1 (negative: no merging): %w", ratio, ErrInvalidParameter)
	}
	return d, tail, ratio, nil
}

// Description names the discretisation.
func (a PLD) Description() string {
	d, tail, ratio, err := a.params()
	if err != nil {
		return "PLD (invalid configuration)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "PLD, pessimistic connect-the-dots discretisation Δ = %g, tails beyond %g added to δ", d, tail)
	if ratio > 0 {
		fmt.Fprintf(&b, ", varying noise merged pessimistically within %g of ε", ratio)
	}
	return b.String()
}

// compose returns the discrete PLDs of history, [remove, add], and the grid
// width used.
func (a PLD) compose(history []Segment) ([2]pldDist, float64, error) {
	d, tail, ratio, err := a.params()
	if err != nil {
		return [2]pldDist{}, 0, err
	}
	segs := mergeHistory(history, 0)
	if ratio > 0 {
		// μ² may rise by 2·ratio so that μ rises by about ratio.
		segs = mergeNoiseBudget(history, 2*ratio, ratio)
	}
	for {
		var out [2]pldDist
		var fault [2]any
		var wg sync.WaitGroup
		for dir := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A panic here (a bug, not bad input: the FFT sizes are the
				// ones gonum plans) would end the process from a goroutine no
				// caller can guard; it becomes an error instead.
				defer func() { fault[dir] = recover() }()
				out[dir] = a.composeDirection(segs, dir == 1, d, tail)
			}()
		}
		wg.Wait()
		for _, f := range fault {
			if f != nil {
				return [2]pldDist{}, 0, fmt.Errorf("accountant: internal error composing the PLD (please report): %v", f)
			}
		}
		if !out[0].over && !out[1].over {
			return out, d, nil
		}
		// Privacy losses too large for the grid (ε far above 10): a
		// coarser grid, still pessimistic.
		d *= 2
	}
}

// composeDirection composes the segments' PLDs in one direction.
func (a PLD) composeDirection(segs []Segment, add bool, d, tail float64) pldDist {
	{
		parts := make([]pldDist, 0, len(segs))
		for _, s := range segs {
			one := subsampledGaussianPLD(s.Q, s.Z, d, add, tail)
			parts = append(parts, selfCompose(one, s.Steps, d, tail))
		}
		if len(parts) == 1 {
			return parts[0]
		}
		// Narrow PLDs are composed pairwise, the two narrowest first (as
		// Huffman coding merges the two rarest symbols), while that stays
		// cheap next to the final width; the wide ones that remain are
		// composed at once by one FFT each and a product.
		ones := make([]int, len(parts))
		for i := range ones {
			ones[i] = 1
		}
		// A rough window (few exponents) is enough to steer the work.
		lo, hi := chernoffWindowOver(parts, ones, d, tail, []float64{1, 4, 16})
		limit := (hi - lo + 1) / 4
		h := &distHeap{parts}
		heap.Init(h)
		for h.Len() > 1 {
			x := heap.Pop(h).(pldDist)
			y := heap.Pop(h).(pldDist)
			if len(x.p)+len(y.p) > limit {
				heap.Push(h, x)
				heap.Push(h, y)
				break
			}
			heap.Push(h, compose(x, y, tail))
		}
		if h.Len() == 1 {
			return h.d[0]
		}
		return productCompose(h.d, ones[:h.Len()], d, tail)
	}
}

// Epsilon returns the ε of history at delta (the larger of the two
// directions). Spent.Order is 0.
func (a PLD) Epsilon(history []Segment, delta float64) (Spent, error) {
	if err := checkDelta(delta); err != nil {
		return Spent{}, err
	}
	dists, d, empty, err := a.composeHistory(history)
	if err != nil || empty {
		return Spent{Delta: delta}, err
	}
	eps := max(dists[0].epsilon(delta, d), dists[1].epsilon(delta, d))
	return Spent{Epsilon: eps, Delta: delta}, nil
}

// Delta returns the δ of history at eps (the larger of the two directions).
func (a PLD) Delta(history []Segment, eps float64) (Spent, error) {
	if err := checkEpsilon(eps); err != nil {
		return Spent{}, err
	}
	dists, d, empty, err := a.composeHistory(history)
	if err != nil || empty {
		return Spent{Epsilon: eps}, err
	}
	return Spent{Epsilon: eps, Delta: max(dists[0].delta(eps, d), dists[1].delta(eps, d))}, nil
}

// composeHistory validates history and the accountant's parameters and
// composes the history's PLDs (empty: a history of no steps, which spends
// nothing).
func (a PLD) composeHistory(history []Segment) (dists [2]pldDist, d float64, empty bool, err error) {
	steps, err := checkHistory(history)
	if err == nil {
		_, _, _, err = a.params()
	}
	if err != nil || steps == 0 {
		return dists, 0, steps == 0, err
	}
	dists, d, err = a.compose(history)
	return dists, d, false, err
}

// CalibrateNoise returns the smallest z (to a relative 1e-4) for which steps
// steps at sampling rate q are (eps, delta)-DP by this accountant, and the ε
// at z, which is checked once more and never exceeds eps.
func (a PLD) CalibrateNoise(q float64, steps int, eps, delta float64) (float64, float64, error) {
	if err := checkCalibration(q, steps, eps, delta); err != nil {
		return 0, 0, err
	}
	if _, _, _, err := a.params(); err != nil {
		return 0, 0, err
	}
	epsilonOf := func(z float64) (float64, error) {
		s, err := a.Epsilon([]Segment{{Q: q, Z: z, Steps: steps}}, delta)
		return s.Epsilon, err
	}
	z, achieved, err := Calibrate(eps, epsilonOf)
	if err != nil {
		return 0, 0, err
	}
	return verifyCalibration(z, achieved, eps, epsilonOf)
}

// verifyCalibration re-evaluates ε at the calibrated z and, should it exceed
// the target (it cannot for a deterministic ε(z), but the check is cheap
// next to the calibration), moves z up until it does not.
func verifyCalibration(z, achieved, eps float64, epsilonOf func(float64) (float64, error)) (float64, float64, error) {
	for range 16 {
		e, err := epsilonOf(z)
		if err != nil {
			return 0, 0, err
		}
		if e <= eps {
			return z, e, nil
		}
		z *= 1 + 1e-6
	}
	return 0, 0, fmt.Errorf("accountant: calibrated z = %g spends ε = %g above the target %g: %w", z, achieved, eps, ErrUnreachable)
}

// distHeap orders PLDs by support width.
type distHeap struct{ d []pldDist }

func (h *distHeap) Len() int           { return len(h.d) }
func (h *distHeap) Less(i, j int) bool { return len(h.d[i].p) < len(h.d[j].p) }
func (h *distHeap) Swap(i, j int)      { h.d[i], h.d[j] = h.d[j], h.d[i] }
func (h *distHeap) Push(x any)         { h.d = append(h.d, x.(pldDist)) }
func (h *distHeap) Pop() any {
	x := h.d[len(h.d)-1]
	h.d = h.d[:len(h.d)-1]
	return x
}
