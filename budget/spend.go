package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/internal/strictjson"
)

// Spend is what one run spends on a data set, in exactly one of four forms:
//
//   - Segments (with Accountant "rdp" or "pld", the run's own choice): Poisson-subsampled
//     Gaussian steps, (q, z, steps) as an accountant.Ledger records them. The form of
//     DP-SGD runs; the only form the PLD composition accepts. An empty list (with
//     Accountant set) is a run that took no step.
//   - RDP: a Rényi DP curve, for mechanisms known only by their RDP (a private
//     hyperparameter search, Papernot & Steinke 2022).
//   - Approx: an (ε, δ)-DP guarantee known only as such (erm's solvers; a calibrated
//     audit before it has run); it composes with the rest by basic composition (ε and δ
//     add), δ = 0 being pure ε-DP.
//   - Unbounded: no finite guarantee (non-private training; a run whose plan is not
//     known before it runs): the data set's ε becomes +Inf.
type Spend struct {
	Accountant string   `json:"accountant,omitempty"`
	Segments   Segments `json:"segments,omitempty"`
	RDP        *Curve   `json:"rdp,omitempty"`
	Approx     *Approx  `json:"approx,omitempty"`
	Unbounded  bool     `json:"unbounded,omitempty"`
}

// Segments are subsampled Gaussian steps, stored in JSON as [{"q", "z", "steps"}, …].
type Segments []accountant.Segment

type segmentJSON struct {
	Q     float64 `json:"q"`
	Z     float64 `json:"z"`
	Steps int     `json:"steps"`
}

// MarshalJSON writes the segments with lowercase field names.
func (s Segments) MarshalJSON() ([]byte, error) {
	out := make([]segmentJSON, len(s))
	for i, g := range s {
		out[i] = segmentJSON{g.Q, g.Z, g.Steps}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes, refusing unknown fields.
func (s *Segments) UnmarshalJSON(b []byte) error {
	var in []segmentJSON
	if err := strictjson.Unmarshal(b, &in); err != nil {
		return err
	}
	*s = make(Segments, len(in))
	for i, g := range in {
		(*s)[i] = accountant.Segment{Q: g.Q, Z: g.Z, Steps: g.Steps}
	}
	return nil
}

// Curve is a Rényi DP curve: Values[i] is the RDP at Orders[i] (ascending, > 1).
type Curve struct {
	Orders []float64 `json:"orders"`
	Values []float64 `json:"values"`
}

// Approx is an (ε, δ)-DP guarantee.
type Approx struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// SegmentSpend returns the Spend of a ledger's history read by accountant acct ("rdp" or
// "pld").
func SegmentSpend(acct string, history []accountant.Segment) Spend {
	if history == nil {
		history = []accountant.Segment{}
	}
	return Spend{Accountant: acct, Segments: history}
}

// Steps returns the number of steps of a segment spend (0 for the other forms).
func (s Spend) Steps() int {
	n := 0
	for _, g := range s.Segments {
		n += g.Steps
	}
	return n
}

// isZero reports whether s holds no form at all (a seal entry's).
func (s Spend) isZero() bool {
	return s.Accountant == "" && s.Segments == nil && s.RDP == nil && s.Approx == nil && !s.Unbounded
}

// isSegments reports whether s is a segment spend.
func (s Spend) isSegments() bool { return s.Accountant != "" }

// Validate reports a spend that is not exactly one of the four forms or whose values are
// out of range.
func (s Spend) Validate() error {
	forms := 0
	for _, set := range []bool{s.isSegments(), s.RDP != nil, s.Approx != nil, s.Unbounded} {
		if set {
			forms++
		}
	}
	if forms != 1 {
		return fmt.Errorf("budget: a spend holds %d of the forms segments, rdp, approx, unbounded: want exactly one", forms)
	}
	if len(s.Segments) > 0 && !s.isSegments() {
		return errors.New("budget: segments without an accountant")
	}
	switch {
	case s.isSegments():
		if s.Accountant != "rdp" && s.Accountant != "pld" {
			return fmt.Errorf("budget: accountant %q: want rdp or pld", s.Accountant)
		}
		total := 0
		for i, g := range s.Segments {
			if !(g.Q > 0 && g.Q <= 1) || !(g.Z > 0) || math.IsInf(g.Z, 1) {
				return fmt.Errorf("budget: segment %d: q = %v, z = %v: want q in (0, 1] and a finite z > 0", i, g.Q, g.Z)
			}
			if g.Steps < 1 || total > math.MaxInt32-g.Steps {
				return fmt.Errorf("budget: segment %d: %d steps: want ≥ 1 (and at most 2³¹−1 in all)", i, g.Steps)
			}
			total += g.Steps
		}
	case s.RDP != nil:
		c := s.RDP
		if len(c.Orders) == 0 || len(c.Orders) != len(c.Values) {
			return fmt.Errorf("budget: RDP curve of %d orders and %d values: want as many, at least one", len(c.Orders), len(c.Values))
		}
		for i, a := range c.Orders {
			if !(a > 1 && a <= accountant.MaxOrder) || (i > 0 && !(a > c.Orders[i-1])) {
				return fmt.Errorf("budget: RDP order %v: want ascending orders in (1, %d]", a, accountant.MaxOrder)
			}
			if v := c.Values[i]; !(v >= 0) || math.IsInf(v, 1) {
				return fmt.Errorf("budget: RDP %v at order %v: want a finite value ≥ 0", v, a)
			}
		}
	case s.Approx != nil:
		if e := s.Approx.Epsilon; !(e >= 0) || math.IsInf(e, 1) {
			return fmt.Errorf("budget: ε = %v: want a finite ε ≥ 0", e)
		}
		if d := s.Approx.Delta; !(d >= 0 && d < 1) {
			return fmt.Errorf("budget: δ = %v: want δ in [0, 1)", d)
		}
	}
	return nil
}
