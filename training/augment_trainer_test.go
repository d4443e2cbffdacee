package training

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

// tinyImages is n random 1×8×8 images of 3 classes.
func tinyImages(t *testing.T, n int, seed uint64) datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 1))
	pixels, labels := make([]byte, n*64), make([]byte, n)
	for i := range pixels {
		pixels[i] = byte(rng.IntN(256))
	}
	for i := range labels {
		labels[i] = byte(rng.IntN(3))
	}
	ds, err := datasets.NewImages([]int{1, 8, 8}, 3, pixels, labels)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func tinySpec() nn.Spec {
	return nn.Spec{Name: "tiny8", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		layers.Conv2D{Filters: 2, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}},
		layers.Tanh{},
		layers.Flatten{},
		layers.Dense{Units: 3},
	}}
}

func augConfig(train datasets.Dataset, k int, seed uint64) TrainerConfig {
	return TrainerConfig{
		Data:         Data{Train: train},
		Rule:         dpoptim.NewSGD(dpoptim.Constant(0.5)),
		Schedule:     Schedule{BatchSize: 8, Epochs: 2},
		Seed:         &seed,
		Privacy:      &Privacy{Clip: clipping.Flat{C: 1}, NoiseMultiplier: 1, Delta: 1e-5},
		Augmentation: Augmentation{Multiplicity: k, Augment: datasets.Augment{Crop: true, Pad: 2, Flip: true}},
	}
}

func augTrainer(t *testing.T, batch int, cfg TrainerConfig) *Trainer {
	t.Helper()
	m, err := nn.New(tinySpec(), batch, nn.WithSeed(7))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestAugmentedLoad: example idx[j]'s K views fill rows j·K … j·K+K−1, each the
// Augment's View for (key, step, example, view), and the rest of the batch is masked.
func TestAugmentedLoad(t *testing.T) {
	train := tinyImages(t, 40, 1)
	const k = 3
	tr := augTrainer(t, 12, augConfig(train, k, 5))
	if tr.Model().GroupSize() != k {
		t.Fatalf("model group size %d, want %d", tr.Model().GroupSize(), k)
	}
	tr.step = 9
	idx := []int{4, 31, 17}
	b := tr.loadTrain(idx)
	a := tr.cfg.Augmentation.Augment
	key := datasets.AugmentKey(5)
	want, scratch := make([]float32, 64), make([]float32, 64)
	for r := range 12 {
		j := r / k
		if j >= len(idx) {
			if b.Mask[r] {
				t.Fatalf("row %d is real", r)
			}
			continue
		}
		label := a.View(train, idx[j], 9, r%k, key, want, scratch, []int{1, 8, 8})
		if !b.Mask[r] || b.Labels[r] != label || !slices.Equal(b.X[r*64:(r+1)*64], want) {
			t.Fatalf("row %d is not view %d of example %d at step 9", r, r%k, idx[j])
		}
	}
	if slices.Equal(b.X[0:64], b.X[64:128]) && slices.Equal(b.X[64:128], b.X[128:192]) {
		t.Fatal("the three views of example 4 are identical")
	}
}

// TestAugmentedRunResumes: a seeded run with K = 2 (logical batches of about 8 in
// physical batches of 6 examples × 2 views), stopped after 3 steps, checkpointed
// and restored into a fresh trainer, ends with the uninterrupted run's parameters bit for
// bit; a checkpoint of a K = 2 run is refused by a K = 3 trainer, and by one without
// augmentation.
func TestAugmentedRunResumes(t *testing.T) {
	train := tinyImages(t, 40, 2)
	whole := augTrainer(t, 12, augConfig(train, 2, 11))
	if _, err := whole.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, whole.Model().NumParams())
	whole.Model().Params(want)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := augConfig(train, 2, 11)
	cfg.Callbacks.OnStep = func(p StepProgress) error {
		if p.GlobalStep == 3 {
			cancel()
		}
		return nil
	}
	first := augTrainer(t, 12, cfg)
	if _, err := first.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	ck, err := first.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if got := ck.Settings[SettingAugment]; got != "K=2 crop(pad=2,mirror),flip" {
		t.Errorf("checkpoint setting %q", got)
	}
	second := augTrainer(t, 12, augConfig(train, 2, 11))
	if err := second.Restore(ck); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, second.Model().NumParams())
	second.Model().Params(got)
	if !slices.Equal(got, want) {
		t.Fatal("the resumed run differs from the uninterrupted one")
	}

	for _, other := range []TrainerConfig{augConfig(train, 3, 11), func() TrainerConfig {
		c := augConfig(train, 0, 11)
		c.Augmentation.Augment = datasets.Augment{}
		return c
	}()} {
		tr := augTrainer(t, 12, other)
		if err := tr.Restore(ck); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), SettingAugment) {
			t.Errorf("K=%d restoring a K=2 checkpoint: %v, want ErrMismatch", other.Augmentation.Multiplicity, err)
		}
	}

	// Another seed draws other views and so trains to other parameters.
	other := augTrainer(t, 12, augConfig(train, 2, 12))
	if _, err := other.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	other.Model().Params(got)
	if slices.Equal(got, want) {
		t.Fatal("two seeds gave the same parameters")
	}
}

func TestAugmentConfigErrors(t *testing.T) {
	train := tinyImages(t, 40, 3)
	flat, err := datasets.NewImages([]int{64}, 3, make([]byte, 40*64), make([]byte, 40))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		batch int
		edit  func(*TrainerConfig)
	}{
		{"negative K", 8, func(c *TrainerConfig) { c.Augmentation.Multiplicity = -1 }},
		{"K without augmentation", 8, func(c *TrainerConfig) { c.Augmentation.Augment = datasets.Augment{} }},
		{"augmentation without K", 8, func(c *TrainerConfig) { c.Augmentation.Multiplicity = 0 }},
		{"batch not a multiple of K", 9, func(c *TrainerConfig) {}},
		{"padding wider than the image", 8, func(c *TrainerConfig) { c.Augmentation.Augment.Pad = 9 }},
	} {
		cfg := augConfig(train, 2, 1)
		tc.edit(&cfg)
		m, err := nn.New(tinySpec(), tc.batch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewTrainer(m, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", tc.name, err)
		}
	}
	// A front end's features are cached once per dataset: views of them would be crops of
	// feature maps, not of images.
	scat := nn.Spec{Name: "scat8", InputShape: []int{1, 8, 8}, NumClasses: 3, Layers: []layers.Layer{
		layers.Scattering2D{J: 1, L: 4}, layers.Flatten{}, layers.Dense{Units: 3}}}
	sm, err := nn.New(scat, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTrainer(sm, augConfig(train, 2, 1)); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "front end") {
		t.Errorf("augmentation before a front end: %v, want ErrConfig naming the front end", err)
	}
	logreg := nn.Spec{Name: "lr", InputShape: []int{64}, NumClasses: 3, Layers: []layers.Layer{layers.Dense{Units: 3}}}
	m, err := nn.New(logreg, 8)
	if err != nil {
		t.Fatal(err)
	}
	cfg := augConfig(flat, 2, 1)
	if _, err := NewTrainer(m, cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("crop of flat examples: %v, want ErrConfig", err)
	}
}
