package training_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/datatest"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// relabeled is ds with example 0's label changed.
type relabeled struct{ datasets.Dataset }

func (r relabeled) Example(i int, dst []float32) int {
	l := r.Dataset.Example(i, dst)
	if i == 0 {
		l = (l + 1) % r.NumClasses()
	}
	return l
}

func fingerprintTrainer(t *testing.T, ds datasets.Dataset, content string) *training.Trainer {
	t.Helper()
	return newTrainer(t, newModel(t, models.LogisticRegression(), 32, nn.WithSeed(1)), training.TrainerConfig{
		Data:     training.Data{Train: ds, Name: "mnist-100", ContentFingerprint: content},
		Rule:     dpoptim.NewSGD(dpoptim.Constant(0.1)),
		Schedule: training.Schedule{BatchSize: 50, Epochs: 1},
		Seed:     seedPtr(3),
	})
}

// A checkpoint records the content fingerprint of the training data, and Restore refuses
// data with the same size and labels but other examples (every pixel 255), which the
// label fingerprint alone accepted.
func TestRestoreRefusesOtherContent(t *testing.T) {
	train, _ := embedded(t, 100)
	c, err := fingerprintTrainer(t, train, "").Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if want := datasets.ContentFingerprint(train); c.Dataset.Content != want {
		t.Fatalf("checkpoint content_sha256 %q, want the data's %q", c.Dataset.Content, want)
	}
	if datasets.ContentFingerprint(datatest.Saturated{Dataset: train}) == c.Dataset.Content {
		t.Fatal("test data: saturating the pixels left the content fingerprint unchanged")
	}
	if err := fingerprintTrainer(t, train, "").Restore(c); err != nil {
		t.Errorf("restoring on the same data: %v", err)
	}
	err = fingerprintTrainer(t, datatest.Saturated{Dataset: train}, "").Restore(c)
	if !errors.Is(err, training.ErrMismatch) || !strings.Contains(err.Error(), "content") {
		t.Errorf("restoring on the same labels with every pixel 255: %v, want ErrMismatch naming the content", err)
	}

	// A checkpoint older than the content fingerprint: the content cannot be checked,
	// the labels still are.
	old := *c
	old.Dataset.Content = ""
	if !old.Dataset.ContentUnchecked(c.Dataset) {
		t.Error("ContentUnchecked = false for a fingerprint without content")
	}
	if err := fingerprintTrainer(t, datatest.Saturated{Dataset: train}, "").Restore(&old); err != nil {
		t.Errorf("restoring a checkpoint without content_sha256 on the same labels: %v, want accepted (content cannot be checked)", err)
	}
	if err := fingerprintTrainer(t, relabeled{train}, "").Restore(&old); !errors.Is(err, training.ErrMismatch) {
		t.Errorf("restoring a checkpoint without content_sha256 on other labels: %v, want ErrMismatch", err)
	}
}

// TrainerConfig.Data.ContentFingerprint is used as given (cmd/train computes it once per
// load), and one that is not a hex SHA-256 is refused.
func TestGivenContentFingerprint(t *testing.T) {
	train, _ := embedded(t, 100)
	given := strings.Repeat("ab", 32)
	c, err := fingerprintTrainer(t, train, given).Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if c.Dataset.Content != given {
		t.Errorf("checkpoint content_sha256 %q, want the given %q", c.Dataset.Content, given)
	}
	for _, bad := range []string{"abc", strings.Repeat("AB", 32), strings.Repeat("g", 64)} {
		_, err := training.NewTrainer(newModel(t, models.LogisticRegression(), 32), training.TrainerConfig{
			Data:     training.Data{Train: train, ContentFingerprint: bad},
			Rule:     dpoptim.NewSGD(dpoptim.Constant(0.1)),
			Schedule: training.Schedule{BatchSize: 50, Epochs: 1},
		})
		if !errors.Is(err, training.ErrConfig) {
			t.Errorf("ContentFingerprint %q: %v, want ErrConfig", bad, err)
		}
	}
}

// The content fingerprint survives Save and Load, and a stored one that is not a hex
// SHA-256 is refused as invalid.
func TestContentFingerprintStored(t *testing.T) {
	train, _ := embedded(t, 100)
	c, err := fingerprintTrainer(t, train, "").Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/c.ckpt"
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Dataset.Equal(c.Dataset) || got.Dataset.Content != c.Dataset.Content {
		t.Errorf("loaded fingerprint %v, saved %v", got.Dataset, c.Dataset)
	}
	c.Dataset.Content = "not-hex"
	if err := checkpoint.Save(path, c); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.Load(path); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("loading content_sha256 \"not-hex\": %v, want ErrInvalid", err)
	}
}
