package traincmd

import (
	"math"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
)

// adaptiveFlags are the flags of -clipping adaptive: an error with any other clipping.
var adaptiveFlags = []string{"clip-quantile", "clip-lr", "clip-count-noise"}

// validateAdaptive checks the adaptive clipping flags (a private optimizer's).
func (o *options) validateAdaptive() error {
	if o.clipping != "adaptive" {
		for _, f := range adaptiveFlags {
			if o.set[f] {
				return exit.Usagef("-%s applies to -clipping adaptive, not -clipping %s", f, o.clipping)
			}
		}
		return nil
	}
	if !(o.clipQuantile > 0 && o.clipQuantile < 1) {
		return exit.Usagef("-clip-quantile %v: want a quantile in (0, 1)", o.clipQuantile)
	}
	if !(o.clipLR > 0) || math.IsInf(o.clipLR, 0) {
		return exit.Usagef("-clip-lr %v: want a finite learning rate > 0", o.clipLR)
	}
	if !(o.clipCountNoise >= 0) || math.IsInf(o.clipCountNoise, 0) {
		return exit.Usagef("-clip-count-noise %v: want a finite σ_b > 0 (or 0 for batch/20)", o.clipCountNoise)
	}
	rule, err := buildRule(o)
	if err != nil {
		return err
	}
	if _, ok := rule.(dpoptim.NoiseScaler); ok {
		return exit.Usagef("-clipping adaptive: optimizer %s matches its noise to its step size; adaptive clipping is not supported with it", o.optimizer)
	}
	return nil
}

// adaptiveClip is the library configuration of -clipping adaptive.
func (o *options) adaptiveClip() *dpoptim.AdaptiveClip {
	return &dpoptim.AdaptiveClip{TargetQuantile: o.clipQuantile, LearningRate: o.clipLR, CountNoise: o.clipCountNoise}
}
