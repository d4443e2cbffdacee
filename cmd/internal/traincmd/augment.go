package traincmd

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/training"
)

// augmentFlags are -augmult and -augment: augmentation multiplicity (De et al. 2022).
type augmentFlags struct {
	k    int
	spec string // -augment as given ("" until resolved: the dataset's default)
}

func addAugmentFlags(fs *flag.FlagSet, a *augmentFlags) {
	fs.IntVar(&a.k, "augmult", 0, "augmentation multiplicity K: train on K augmented views of every sampled example, in K consecutive rows of the physical batch; the example's gradient is the mean over its views before clipping, so ε does not change (De et al. 2022). 0: no augmentation; 1: one augmented view. -physical-batch counts rows and must be a multiple of K (default: the largest multiple of K up to 128)")
	fs.StringVar(&a.spec, "augment", "", "views for -augmult: crop,flip | crop | flip | none: random crop of the image padded by 4 mirrored pixels (crop:N: by N pixels, e.g. crop:1 or crop:2 for 28×28 images), random horizontal flip (default: crop,flip for cifar10 and cifar100, crop for the others: digits and clothing are not mirror-symmetric)")
}

// augment is the datasets.Augment of -augment (the dataset's default when not given).
func (o *options) augment() (datasets.Augment, error) {
	if o.aug.spec == "" {
		return datasets.DefaultAugment(o.dataset), nil
	}
	a, err := datasets.ParseAugment(o.aug.spec)
	if err != nil {
		return datasets.Augment{}, exit.Usagef("-augment %q: want crop,flip, crop, flip or none (crop:N for a padding of N pixels, 1 to %d)", o.aug.spec, datasets.MaxPad)
	}
	return a, nil
}

// augmentSpec is the -augment value of a: "crop,flip", "crop", "flip" or "none", with
// "crop:N" for a padding other than datasets.DefaultPad (so that checkpoints of runs with
// the default keep recording "crop").
func augmentSpec(a datasets.Augment) string {
	var parts []string
	switch {
	case a.Crop && a.Pad != datasets.DefaultPad:
		parts = append(parts, "crop:"+strconv.Itoa(a.Pad))
	case a.Crop:
		parts = append(parts, "crop")
	}
	if a.Flip {
		parts = append(parts, "flip")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// validateAugment checks -augmult and -augment, and that the physical batch (rows) holds
// whole examples.
func (o *options) validateAugment() error {
	if o.aug.k < 0 {
		return exit.Usagef("-augmult %d: want K ≥ 0 (0: no augmentation)", o.aug.k)
	}
	a, err := o.augment()
	if err != nil {
		return err
	}
	if o.aug.k == 0 {
		if o.set["augment"] {
			return exit.Usagef("-augment %s needs -augmult K ≥ 1", o.aug.spec)
		}
		return nil
	}
	if a.Identity() {
		return exit.Usagef("-augmult %d with -augment none: every view would be the example itself", o.aug.k)
	}
	if o.physicalBatch%o.aug.k != 0 && !o.physicalBatchDefaulted {
		return exit.Usagef("-physical-batch %d is not a multiple of -augmult %d (rows per call = examples × K)", o.physicalBatch, o.aug.k)
	}
	return nil
}

// augmentPhysicalBatch makes a defaulted physical batch (already at most -batch) a
// multiple of K: K views of the largest number of examples that fit, at least one.
func (o *options) augmentPhysicalBatch() {
	if k := o.aug.k; k > 1 && o.physicalBatchDefaulted {
		o.physicalBatch = k * max(1, o.physicalBatch/k)
	}
}

// augmentConfig sets the trainer's augmentation.
func (o *options) augmentConfig(cfg *training.TrainerConfig) error {
	if o.aug.k == 0 {
		return nil
	}
	a, err := o.augment()
	if err != nil {
		return err
	}
	cfg.Augmentation.Multiplicity, cfg.Augmentation.Augment = o.aug.k, a
	return nil
}

// augmentSettings records -augmult and the resolved -augment, so that a resumed run
// takes them from the checkpoint (and refuses others).
func (o *options) augmentSettings(s map[string]string) {
	if o.aug.k == 0 {
		return
	}
	a, _ := o.augment()
	s["augmult"] = strconv.Itoa(o.aug.k)
	s["augment"] = augmentSpec(a)
}

// augmentHeader prints the augmentation line of the header.
func (o *options) augmentHeader(w io.Writer) {
	if o.aug.k == 0 {
		return
	}
	a, _ := o.augment()
	fmt.Fprintf(w, "augmentation: K = %d views of every sampled example (%v), the example's gradient the mean over its views before clipping; %d examples × %d views per physical batch; training loss and accuracy are per view\n",
		o.aug.k, a, o.physicalBatch/o.aug.k, o.aug.k)
}
