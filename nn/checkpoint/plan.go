package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/privtrain/privtrain/accountant"
)

// Plan is a training run's schedule and privacy budget, fixed by NewTrainer before the
// first step: the ε the whole run will spend is known before it starts.
//
// A Plan serialises itself (MarshalJSON, UnmarshalJSON): the JSON object is the definition
// of the run as checkpoints store it, under the json tags below, with Sampling by name and
// without Spent (derived, and recomputed by the trainer that restores it).
type Plan struct {
	DatasetSize   int      `json:"n"`               // n, the number of training examples
	BatchSize     int      `json:"batch"`           // b, the expected logical batch size
	PhysicalBatch int      `json:"physical_batch"`  // rows per model call; logical batches run in chunks of this size
	Sampling      Sampling `json:"sampling"`        // Poisson (default) or Shuffle; stored by name
	SampleRate    float64  `json:"q"`               // q = b/n, what the accountant records for every step
	StepsPerEpoch int      `json:"steps_per_epoch"` // ⌈n/b⌉
	Epochs        int      `json:"epochs"`
	Steps         int      `json:"steps"` // Epochs·StepsPerEpoch

	// Private is false for non-private training (no clipping, no noise, ε = +Inf).
	Private bool `json:"private"`
	// NoiseMultiplier z: every step adds N(0, (z·Clip)²) to each coordinate of the clipped
	// sum. For an ADP-SGD rule it is the base multiplier and step t uses z·NoiseScale(t).
	NoiseMultiplier float64 `json:"noise_multiplier"`
	// NoiseSchedule says that the rule scales the multiplier per step (a
	// dpoptim.NoiseScaler such as ADP-SGD): step t records z·NoiseScale(t), not z.
	NoiseSchedule bool `json:"noise_schedule,omitempty"`
	// Calibrated says that NoiseMultiplier was computed from TargetEpsilon.
	Calibrated bool `json:"calibrated"`
	// Clip is the L2 sensitivity of the clipped sum (the clipping rule's Bound) and
	// ClipRule its description ("flat C=1", "per-layer C=[…]"). With adaptive clipping
	// Clip is the initial C_0 and ClipRule "adaptive C0=… quantile=… lr=… count-noise=…";
	// the current C_t is in the optimizer state.
	Clip     float64 `json:"clip"`
	ClipRule string  `json:"clip_rule"`
	Delta    float64 `json:"delta"`
	// TargetEpsilon is the budget the plan must not exceed (0: none was given).
	TargetEpsilon float64 `json:"target_epsilon"`
	// Spent is what the whole plan spends at Delta by the trainer's accountant (RDP, with
	// the optimal order, unless Privacy.Accountant chooses another); its Epsilon is +Inf
	// for non-private training. It is not serialised.
	Spent accountant.Spent `json:"-"`
}

// planFields is Plan without its methods, so that MarshalJSON and UnmarshalJSON can use
// the default encoding of its fields.
type planFields Plan

// planWire is the stored form: Plan's fields, with Sampling (shadowing the embedded one)
// by name.
type planWire struct {
	planFields
	Sampling string `json:"sampling"`
}

// MarshalJSON encodes the plan's definition (everything but Spent).
func (p Plan) MarshalJSON() ([]byte, error) {
	return json.Marshal(planWire{planFields(p), p.Sampling.String()})
}

// UnmarshalJSON decodes a plan written by MarshalJSON, refusing unknown fields and any
// plan that NewTrainer could not have made (batch outside [1, n], steps that do not add
// up, q ≠ b/n, privacy settings out of range or present for non-private training). Spent
// is set to +Inf: only a trainer can recompute it. On error p is unchanged.
func (p *Plan) UnmarshalJSON(b []byte) error {
	var w planWire
	if err := strictJSON(string(b), &w); err != nil {
		return err
	}
	sampling, err := ParseSampling(w.Sampling)
	if err != nil {
		return err
	}
	q := Plan(w.planFields)
	q.Sampling, q.Spent = sampling, accountant.Spent{Epsilon: math.Inf(1)}
	if err := q.check(); err != nil {
		return err
	}
	*p = q
	return nil
}

// check reports why a decoded plan is not one NewTrainer could have made.
func (p Plan) check() error {
	switch {
	case p.DatasetSize < 1 || p.BatchSize < 1 || p.BatchSize > p.DatasetSize:
		return fmt.Errorf("batch %d for %d examples", p.BatchSize, p.DatasetSize)
	case p.StepsPerEpoch != accountant.StepsPerEpoch(p.DatasetSize, p.BatchSize):
		return fmt.Errorf("%d steps per epoch, want ⌈%d/%d⌉", p.StepsPerEpoch, p.DatasetSize, p.BatchSize)
	case p.Epochs < 1 || p.Epochs > math.MaxInt32/p.StepsPerEpoch || p.Steps != p.Epochs*p.StepsPerEpoch:
		return fmt.Errorf("%d epochs, %d steps", p.Epochs, p.Steps)
	case p.SampleRate != float64(p.BatchSize)/float64(p.DatasetSize):
		return fmt.Errorf("q = %v, want %d/%d", p.SampleRate, p.BatchSize, p.DatasetSize)
	case p.PhysicalBatch < 1:
		return fmt.Errorf("physical batch %d", p.PhysicalBatch)
	}
	if p.Private {
		switch {
		case !(p.NoiseMultiplier > 0) || !finite(p.NoiseMultiplier):
			return fmt.Errorf("noise multiplier %v", p.NoiseMultiplier)
		case !(p.Clip > 0) || !finite(p.Clip):
			return fmt.Errorf("clip %v", p.Clip)
		case !(p.Delta > 0 && p.Delta < 1):
			return fmt.Errorf("δ = %v", p.Delta)
		case !(p.TargetEpsilon >= 0) || !finite(p.TargetEpsilon):
			return fmt.Errorf("target ε = %v", p.TargetEpsilon)
		}
	} else if p.NoiseMultiplier != 0 || p.Clip != 0 || p.ClipRule != "" || p.Delta != 0 || p.TargetEpsilon != 0 || p.Calibrated || p.NoiseSchedule {
		return errors.New("privacy settings for non-private training")
	}
	return nil
}

// Warnings lists the caveats of the plan that a user should see before trusting its ε.
func (p Plan) Warnings() []string {
	var w []string
	if p.Private && p.Sampling == Shuffle {
		w = append(w, "shuffled fixed-size batches: the reported ε assumes Poisson sampling with q = batch/n, which shuffling does not provide; use Poisson sampling for a proven guarantee")
	}
	if p.Private && p.Delta >= 1/float64(p.DatasetSize) {
		w = append(w, fmt.Sprintf("δ = %g is not below 1/n = %.3g: a mechanism that publishes one random example outright meets (0, 1/n)-DP; choose δ ≪ 1/n", p.Delta, 1/float64(p.DatasetSize)))
	}
	if p.Private && p.Spent.AtEdge {
		w = append(w, fmt.Sprintf("the optimal Rényi order %g is at the edge of the accountant's orders; a wider list of orders may give a smaller ε", p.Spent.Order))
	}
	return w
}

// String describes the plan on one line, e.g.
//
//	poisson sampling q = 0.256 (batch 2048 of 8000, physical 128), 30 epochs × 4 steps = 120 steps; DP: z = 4.3637 calibrated for ε = 3, clip flat C=1, δ = 1e-05, the plan spends ε = 2.9999 (RDP order 7.3)
//
// or, for non-private training, "…; not private (ε = ∞)".
func (p Plan) String() string {
	s := fmt.Sprintf("%s sampling q = %.4g (batch %d of %d, physical %d), %d epochs × %d steps = %d steps",
		p.Sampling, p.SampleRate, p.BatchSize, p.DatasetSize, p.PhysicalBatch, p.Epochs, p.StepsPerEpoch, p.Steps)
	if !p.Private {
		return s + "; not private (ε = ∞)"
	}
	z := fmt.Sprintf("z = %.5g given", p.NoiseMultiplier)
	if p.Calibrated {
		z = fmt.Sprintf("z = %.5g calibrated for ε = %g", p.NoiseMultiplier, p.TargetEpsilon)
	} else if p.TargetEpsilon > 0 {
		z += fmt.Sprintf(", budget ε = %g", p.TargetEpsilon)
	}
	spent := fmt.Sprintf("ε = %.5g", p.Spent.Epsilon)
	switch {
	case math.IsInf(p.Spent.Epsilon, 1):
		spent = "ε = ∞"
	case p.Spent.Order > 0: // RDP; other accountants have no order
		spent += fmt.Sprintf(" (RDP order %g)", p.Spent.Order)
	}
	return fmt.Sprintf("%s; DP: %s, clip %s, δ = %g, the plan spends %s", s, z, p.ClipRule, p.Delta, spent)
}
