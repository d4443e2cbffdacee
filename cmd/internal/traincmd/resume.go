package traincmd

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/privtrain/privtrain/nn/checkpoint"
)

// -resume FILE: the flags a resumed run takes from its checkpoint.

// applyCheckpoint takes the flags not given on the command line from the checkpoint of
// the run being resumed, so that "train -resume FILE" alone continues it.
func (o *options) applyCheckpoint(c *checkpoint.Training, flags *flag.FlagSet) error {
	for name, value := range c.Settings {
		if o.set[name] || flags.Lookup(name) == nil {
			continue
		}
		if err := flags.Set(name, value); err != nil {
			return fmt.Errorf("-resume %s: setting %s=%q: %w", o.resume, name, value, err)
		}
		o.fromCheckpoint = append(o.fromCheckpoint, name)
	}
	if err := o.applyCheckpointLegacy(c); err != nil {
		return err
	}
	if !o.set["epochs"] {
		o.epochs = c.Plan.Epochs
		o.fromCheckpoint = append(o.fromCheckpoint, "epochs")
	}
	if !o.set["physical-batch"] {
		o.physicalBatch = c.Plan.PhysicalBatch
		o.fromCheckpoint = append(o.fromCheckpoint, "physical-batch")
	}
	if v, ok := c.Settings[settingCalibratedFor]; ok {
		o.calibratedForSetting = v
		o.calibratedFor, _ = strconv.ParseFloat(v, 64)
	} else if c.Plan.Calibrated {
		o.calibratedFor = c.Plan.TargetEpsilon // a checkpoint from before the setting: its best knowledge
	}
	if !o.set["seed"] && c.Seeded {
		o.seed, o.seedFromCheckpoint = c.Seed, true
	}
	if err := o.checkResumedHorizon(c); err != nil {
		return err
	}
	if c.Plan.Private && !o.set["noise"] && !o.set["epsilon"] {
		o.privacyFromCheckpoint = true
		if c.Plan.Calibrated {
			o.epsilon = c.Plan.TargetEpsilon
		} else {
			o.noise = c.Plan.NoiseMultiplier
			o.set["noise"] = true
		}
	}
	return nil
}
