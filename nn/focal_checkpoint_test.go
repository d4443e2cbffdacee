package nn_test

import (
	"errors"
	"math"
	"testing"

	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// TestCheckpointKeepsLoss: a checkpoint records the model's loss ("nn.loss", only for the
// focal loss, so that cross-entropy checkpoints are what they were), a model rebuilt from
// it evaluates with that loss unless WithLoss says otherwise, a model of another loss does
// not match it, and a checkpoint without the entry (every one written before it) is the
// cross-entropy.
func TestCheckpointKeepsLoss(t *testing.T) {
	spec := models.LogisticRegression()
	focal := newModel(t, spec, 4, nn.WithDType(nn.Float64), nn.WithSeed(1), nn.WithLoss(nn.Focal(2)))
	randomParams(t, focal, 3)
	x := randomInput(focal, 4, 5)
	b := nn.Batch{X: x, Labels: []int{0, 3, 7, 9}}
	wantLoss, _, err := focal.Evaluate(b)
	if err != nil {
		t.Fatal(err)
	}
	path := saveModel(t, focal, t.TempDir(), nil)
	f, err := tensorfile.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Metadata["nn.loss"]; got != "focal:2" {
		t.Fatalf("nn.loss metadata %q, want focal:2", got)
	}
	c, err := checkpoint.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Loss != "focal:2" {
		t.Fatalf("Loss %q, want focal:2", c.Loss)
	}
	m, err := nn.ModelFromCheckpoint(c, 4)
	if err != nil {
		t.Fatal(err)
	}
	if m.Loss() != nn.Focal(2) {
		t.Fatalf("rebuilt model's loss %v, want focal:2", m.Loss())
	}
	if got, _, err := m.Evaluate(b); err != nil || math.Float64bits(got) != math.Float64bits(wantLoss) {
		t.Fatalf("rebuilt model's loss %v (%v), the trained model's %v", got, err, wantLoss)
	}
	ce, err := nn.ModelFromCheckpoint(c, 4, nn.WithLoss(nn.CrossEntropy))
	if err != nil {
		t.Fatal(err)
	}
	ceLoss, _, err := ce.Evaluate(b)
	if err != nil || ce.Loss() != nn.CrossEntropy || !(ceLoss > wantLoss) {
		t.Fatalf("WithLoss(CrossEntropy): loss %v (%v) of %v, want the cross-entropy, above the focal loss %v", ceLoss, err, ce.Loss(), wantLoss)
	}
	if what, ck, this, ok := ce.MatchesCheckpoint(c); ok || what != "loss" {
		t.Fatalf("a cross-entropy model matches a focal checkpoint: %q %v %v %v", what, ck, this, ok)
	}
	if _, _, _, ok := m.MatchesCheckpoint(c); !ok {
		t.Fatal("the rebuilt model does not match its checkpoint")
	}

	for _, bad := range []string{"focal:-1", "focal:NaN", "mse", "focal:"} {
		c.Loss = bad
		if _, err := nn.ModelFromCheckpoint(c, 4); !errors.Is(err, nn.ErrArchitecture) {
			t.Errorf("loss %q: error %v, want ErrArchitecture", bad, err)
		}
	}

	plain := newModel(t, spec, 4, nn.WithDType(nn.Float64), nn.WithSeed(1))
	path = saveModel(t, plain, t.TempDir(), nil)
	if f, err = tensorfile.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Metadata["nn.loss"]; ok {
		t.Fatalf("a cross-entropy checkpoint records nn.loss %q", v)
	}
	if c, err = checkpoint.Load(path); err != nil {
		t.Fatal(err)
	}
	if m, err = nn.ModelFromCheckpoint(c, 4); err != nil || m.Loss() != nn.CrossEntropy {
		t.Fatalf("checkpoint without a loss: %v, %v; want the cross-entropy", m, err)
	}
	if what, _, _, ok := focal.MatchesCheckpoint(c); ok || what != "loss" {
		t.Fatalf("a focal model matches a cross-entropy checkpoint (%q)", what)
	}
}

// FuzzParseLoss: ParseLoss never panics; what it accepts is valid for New and reads back
// from its String.
func FuzzParseLoss(f *testing.F) {
	for _, s := range []string{"cross-entropy", "focal:2", "focal:0", "focal:-1", "focal:NaN", "focal:", "focal:1e400", "focal:0x1p-3", "focal:1_0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := nn.ParseLoss(s)
		if err != nil {
			if !errors.Is(err, nn.ErrSpec) {
				t.Fatalf("ParseLoss(%q): error %v is not ErrSpec", s, err)
			}
			return
		}
		if err := l.Check(); err != nil {
			t.Fatalf("ParseLoss(%q) accepted %v, which Check refuses: %v", s, l, err)
		}
		if again, err := nn.ParseLoss(l.String()); err != nil || again != l {
			t.Fatalf("ParseLoss(%q) = %v; its String %q reads back as %v, %v", s, l, l.String(), again, err)
		}
	})
}
