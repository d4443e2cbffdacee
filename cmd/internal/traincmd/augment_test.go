package traincmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

func TestAugmentBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-augmult", "-1"}, "-augmult"},
		{[]string{"-augment", "crop"}, "-augmult"},
		{[]string{"-augmult", "2", "-augment", "none"}, "-augment none"},
		{[]string{"-augmult", "2", "-augment", "rotate"}, "-augment"},
		{[]string{"-augmult", "2", "-augment", "crop:0"}, "crop:N for a padding of N pixels"},
		{[]string{"-augmult", "2", "-augment", "crop:29"}, "mirrored padding of 29 pixels on a 28×28 image"},
		{[]string{"-augmult", "3", "-physical-batch", "128"}, "multiple of -augmult 3"},
	} {
		code, stdout, stderr := runCmd(t, context.Background(), tc.args...)
		if code != exit.Usage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("train %s: exit %d, stderr %q; want 2 and one line mentioning %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}

func TestAugmentDefaults(t *testing.T) {
	for _, tc := range []struct {
		args              []string
		want              string
		physical, augmult int
	}{
		{[]string{"-augmult", "3"}, "crop", 126, 3},
		{[]string{"-augmult", "3", "-dataset", "cifar10"}, "crop,flip", 126, 3},
		{[]string{"-augmult", "2", "-augment", "flip"}, "flip", 128, 2},
		{[]string{"-augmult", "4", "-batch", "3"}, "crop", 4, 4}, // one example × 4 views
		{[]string{"-augmult", "2", "-augment", "crop:2,flip"}, "crop:2,flip", 128, 2},
		{[]string{"-augmult", "2", "-augment", "crop:4"}, "crop", 128, 2}, // the default padding is recorded as crop
	} {
		o := parseOptions(t, tc.args...)
		if err := o.validate(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		o.physicalBatch = min(o.physicalBatch, o.batch) // as train does for a defaulted one
		o.augmentPhysicalBatch()
		a, err := o.augment()
		if err != nil {
			t.Fatal(err)
		}
		if augmentSpec(a) != tc.want || o.physicalBatch != tc.physical {
			t.Errorf("%v: augment %s, physical batch %d; want %s, %d", tc.args, augmentSpec(a), o.physicalBatch, tc.want, tc.physical)
		}
		s := o.settings()
		if s["augmult"] != string(rune('0'+tc.augmult)) || s["augment"] != tc.want {
			t.Errorf("%v: settings %v", tc.args, s)
		}
	}
	if s := parseOptions(t).settings(); s["augmult"] != "" || s["augment"] != "" {
		t.Errorf("no augmentation recorded %q, %q", s["augmult"], s["augment"])
	}
}

// TestAugmentRunResumes: logistic regression with -augmult 2 for two epochs, resumed for
// a third from the checkpoint with no augmentation flags, equals three uninterrupted
// epochs bit for bit; the summary and header name the augmentation; resuming with another
// K is refused.
func TestAugmentRunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three epochs twice")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt")
	common := []string{"-model", "logreg", "-seed", "3", "-noise", "1.1", "-batch", "1000", "-augmult", "2"}
	code, stdout, stderr := runCmd(t, context.Background(), append(common, "-epochs", "3", "-checkpoint", a, "-json")...)
	if code != exit.OK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	whole := decodeSummary(t, stdout)
	if whole["augmult"].(float64) != 2 || whole["augment"] != "crop" || int(whole["physical_batch"].(float64))%2 != 0 {
		t.Errorf("summary %v", whole)
	}
	if !strings.Contains(stderr, "augmentation: K = 2 views") {
		t.Errorf("header does not name the augmentation:\n%s", stderr)
	}
	if acc := whole["test_accuracy"].(float64); acc < 0.5 {
		t.Errorf("test accuracy %v", acc)
	}
	mustRun(t, append(common, "-epochs", "2", "-checkpoint", b)...)
	mustRun(t, "-resume", b, "-epochs", "3", "-checkpoint", b)
	ca, err := checkpoint.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := checkpoint.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Step != cb.Step || ca.Step == 0 {
		t.Fatalf("checkpoints at steps %d and %d", ca.Step, cb.Step)
	}
	sameBits(t, "parameter", cb.Params, ca.Params)
	code, _, stderr = runCmd(t, context.Background(), "-resume", b, "-epochs", "4", "-augmult", "4")
	if code != exit.Usage || !strings.Contains(stderr, "augmult") {
		t.Errorf("resuming with another -augmult: exit %d, %q", code, stderr)
	}
}

// TestAugmentSpecRoundTrip: the -augment value a checkpoint records reads back as the
// same augmentation, for every padding and with and without the flip, so that a resumed
// run augments as the original did.
func TestAugmentSpecRoundTrip(t *testing.T) {
	for pad := 0; pad <= datasets.MaxPad; pad++ {
		for _, flip := range []bool{false, true} {
			a := datasets.Augment{Crop: pad > 0, Pad: pad, Flip: flip}
			got, err := datasets.ParseAugment(augmentSpec(a))
			if err != nil || got != a {
				t.Errorf("%+v: spec %q reads back as %+v, %v", a, augmentSpec(a), got, err)
			}
		}
	}
}
