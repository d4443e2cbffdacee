package traincmd

import (
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/nn"
)

// The training loss (-loss): its validation, the model option and the setting that a
// resumed run takes from its checkpoint (flags not given are) and must match.

const lossUsage = "training loss: cross-entropy | focal:GAMMA (the softmax focal loss −(1−p_y)^γ·log p_y of Lin et al. 2017 with γ = GAMMA ≥ 0, e.g. focal:2: down-weights confidently classified examples, whose small unclipped gradients otherwise dilute the clipped ones; no privacy cost, each example's gradient is still clipped to C; focal:0 is cross-entropy). The reported training and test losses are this loss; the checkpoint records it"

// validateLoss checks -loss.
func (o *options) validateLoss() error {
	if _, err := nn.ParseLoss(o.loss); err != nil {
		return exit.Usagef("-loss %q: want cross-entropy or focal:GAMMA with a finite GAMMA ≥ 0 (e.g. focal:2)", o.loss)
	}
	return nil
}

// lossOf is the -loss value (validated).
func (o *options) lossOf() nn.Loss {
	l, _ := nn.ParseLoss(o.loss)
	return l
}

// lossSettings records a loss other than the cross-entropy (a run with the default
// records nothing new, so that checkpoints written before -loss resume).
func (o *options) lossSettings(s map[string]string) {
	if v := lossJSON(o.lossOf()); v != "" {
		s["loss"] = v
	}
}

// lossJSON is the loss as the summary's "loss_function" and the checkpoint's "loss"
// setting name it: "" (omitted) for the cross-entropy.
func lossJSON(l nn.Loss) string {
	if l == nn.CrossEntropy {
		return ""
	}
	return l.String()
}
