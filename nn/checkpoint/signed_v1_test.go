package checkpoint_test

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// legacySignedKey is the key testdata/signed-v1.ckpt was signed with.
const legacySignedKey = "legacy test key, not secret"

// TestLegacySignedLoads: testdata/signed-v1.ckpt was written by SaveWithKey before the
// MAC of format 2 existed (commit 3351d00: savedCheckpoint of package training's tests,
// one epoch of logistic regression on 200 MNIST examples, batch 50, signed with
// legacySignedKey). Files of that format still load with their key, and only with it.
func TestLegacySignedLoads(t *testing.T) {
	const path = "testdata/signed-v1.ckpt"
	c, err := checkpoint.LoadWithKey(path, []byte(legacySignedKey))
	if err != nil {
		t.Fatalf("LoadWithKey of a format-1 signed checkpoint: %v", err)
	}
	// 784·10 weights and 10 biases; 200 examples in batches of 50: 4 steps.
	if c.Model != "logreg" || len(c.Params) != 7850 || c.Step != 4 {
		t.Errorf("loaded model %q, %d parameters, step %d; want logreg, 7850, 4", c.Model, len(c.Params), c.Step)
	}
	if _, err := checkpoint.LoadWithKey(path, []byte("another key of sixteen bytes")); !errors.Is(err, checkpoint.ErrAuthentication) {
		t.Errorf("another key: %v, want ErrAuthentication", err)
	}
	if _, signed, err := checkpoint.LoadUnverified(path); err != nil || !signed {
		t.Errorf("LoadUnverified: signed %v, %v", signed, err)
	}
	// The file stores its tensors in another order than the names' (the order the
	// format-1 MAC covers them in), which is what makes that MAC costly to check: the
	// names in the order of their data offsets, read off the safetensors header.
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
	n := binary.LittleEndian.Uint64(stream)
	var header map[string]struct {
		Offsets [2]uint64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(stream[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	delete(header, "__metadata__")
	var names []string
	for name := range header {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(header[a].Offsets[0], header[b].Offsets[0]), cmp.Compare(header[a].Offsets[1], header[b].Offsets[1]))
	})
	if len(names) < 2 || slices.IsSorted(names) {
		t.Errorf("tensors stored in name order %v: the test file does not exercise the format-1 MAC's order", names)
	}
}
