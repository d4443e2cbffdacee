package checkpoint

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// legacySignedKey is the key testdata/signed-v1.ckpt was signed with.
const legacySignedKey = "legacy test key, not secret"

// TestLegacySignedLoads: testdata/signed-v1.ckpt was written by SaveWithKey before the
// MAC of format 2 existed (commit 3351d00: savedCheckpoint of package training's tests,
// one epoch of logistic regression on 200 MNIST examples, batch 50, signed with
// legacySignedKey). Files of that format still load with their key, and only with it.
func TestLegacySignedLoads(t *testing.T) {
	const path = "testdata/signed-v1.ckpt"
	c, err := LoadWithKey(path, []byte(legacySignedKey))
	if err != nil {
		t.Fatalf("LoadWithKey of a format-1 signed checkpoint: %v", err)
	}
	// 784·10 weights and 10 biases; 200 examples in batches of 50: 4 steps.
	if c.Model != "logreg" || len(c.Params) != 7850 || c.Step != 4 {
		t.Errorf("loaded model %q, %d parameters, step %d; want logreg, 7850, 4", c.Model, len(c.Params), c.Step)
	}
	if _, err := LoadWithKey(path, []byte("another key of sixteen bytes")); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another key: %v, want ErrAuthentication", err)
	}
	if _, signed, err := LoadUnverified(path); err != nil || !signed {
		t.Errorf("LoadUnverified: signed %v, %v", signed, err)
	}
	// The file stores its tensors in another order than the names' (the order the
	// format-1 MAC covers them in), which is what makes that MAC costly to check.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	stream, err := dec.DecodeAll(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLayout(stream)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range l.entries {
		names = append(names, e.name)
	}
	if slices.IsSorted(names) {
		t.Errorf("tensors stored in name order %v: the test file does not exercise the format-1 MAC's order", names)
	}
}
