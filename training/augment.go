package training

import (
	"fmt"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn"
)

// Augmentation multiplicity (De et al. 2022): the trainer loads K augmented views of
// every sampled example into K consecutive rows of the physical batch, and the model
// treats each group of K rows as one example whose gradient is the mean of its views'
// gradients, clipped as a whole (clipping.Workspace.SetGroupSize). The sampling rate,
// the sensitivity, the noise and the ledger are per example and do not change.

// SettingAugment is the key under which NewTrainer records the augmentation (multiplicity
// and views) in TrainerConfig.Settings, so that a checkpoint of the run refuses to resume
// with another. It is absent without augmentation.
const SettingAugment = "nn.augment"

// augmenter is a trainer's augmentation state: the views' key and one example's scratch.
type augmenter struct {
	k       int
	aug     datasets.Augment
	key     uint64
	shape   []int
	scratch []float32
}

// views is the number of rows per sampled example: K with augmentation, else 1.
func (t *Trainer) views() int {
	if t.aug == nil {
		return 1
	}
	return t.aug.k
}

// setupAugment checks TrainerConfig.Augmentation.Multiplicity and Augment, sets the model's
// group size and records the augmentation in the settings.
func (t *Trainer) setupAugment() error {
	k, a := t.cfg.Augmentation.Multiplicity, t.cfg.Augmentation.Augment
	switch {
	case k < 0:
		return fmt.Errorf("%w: augmentation multiplicity %d, want ≥ 0 (0: no augmentation)", ErrConfig, k)
	case k == 0:
		if !a.Identity() {
			return fmt.Errorf("%w: augmentation %v with multiplicity 0; set Augmentation.Multiplicity ≥ 1", ErrConfig, a)
		}
		return t.model.SetGroupSize(1)
	case a.Identity():
		return fmt.Errorf("%w: augmentation multiplicity %d without any augmentation (every view would be the example itself)", ErrConfig, k)
	case t.model.HasFrontEnd():
		// The trainer trains on the front end's cached features; views would crop and
		// flip those, not the images, and recomputing the front end per view and step
		// would undo the caching.
		return fmt.Errorf("%w: augmentation multiplicity with model %s, whose front end (%s) is computed once per dataset: augment the images before it, or use a model without a front end", ErrConfig, t.model.Name(), t.model.FrontEnd())
	case t.model.BatchSize()%k != 0:
		return fmt.Errorf("%w: physical batch %d is not a multiple of the augmentation multiplicity %d", ErrConfig, t.model.BatchSize(), k)
	}
	shape := t.cfg.Data.Train.Shape()
	if err := a.Check(shape); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := t.model.SetGroupSize(k); err != nil {
		return err
	}
	au := &augmenter{k: k, aug: a, shape: shape, scratch: make([]float32, datasets.Size(t.cfg.Data.Train))}
	if t.cfg.Seed != nil {
		au.key = datasets.AugmentKey(*t.cfg.Seed)
	} else {
		var err error
		if au.key, err = datasets.NewAugmentKey(); err != nil {
			return err
		}
	}
	if t.cfg.Settings == nil {
		t.cfg.Settings = map[string]string{}
	}
	t.cfg.Settings[SettingAugment] = fmt.Sprintf("K=%d %v", k, a)
	t.aug = au
	return nil
}

// loadTrain fills the physical batch for the training examples idx: the examples
// themselves, or with augmentation K views of each (rows j·K … j·K+K−1 for idx[j],
// drawn from the key, the step, the example's index and the view).
func (t *Trainer) loadTrain(idx []int) nn.Batch {
	if t.aug == nil {
		return t.load(t.cfg.Data.Train, idx)
	}
	a, k := t.aug, t.aug.k
	size := len(t.x) / len(t.labels)
	for r := range t.labels {
		j := r / k
		if j >= len(idx) {
			t.mask[r] = false
			continue
		}
		t.labels[r] = a.aug.View(t.cfg.Data.Train, idx[j], t.step, r%k, a.key, t.x[r*size:(r+1)*size], a.scratch, a.shape)
		t.mask[r] = true
	}
	return nn.Batch{X: t.x, Labels: t.labels, Mask: t.mask}
}
