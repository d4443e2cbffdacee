package training_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// TestKeyedCheckpoint: a whole-run forgery — plan and ledger both rewritten to z = 100,
// consistent with each other, checksums recomputed — passes Load (nothing without a key
// can tell it from a real run), but not LoadWithKey.
func TestKeyedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	_, c := savedCheckpoint(t, dir, 1)
	key := []byte("0123456789abcdef-user-held")
	path := filepath.Join(dir, "keyed.ckpt")
	if err := checkpoint.SaveWithKey(path, c, key); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.LoadWithKey(path, key)
	if err != nil {
		t.Fatalf("LoadWithKey of a keyed checkpoint: %v", err)
	}
	if got.Step != c.Step || firstDiff(got.Params, c.Params) >= 0 {
		t.Error("keyed round trip changed the checkpoint")
	}
	if _, err := checkpoint.Load(path); err != nil {
		t.Errorf("Load (no key) of a keyed checkpoint: %v", err)
	}
	z := strconv.FormatFloat(c.Plan.NoiseMultiplier, 'g', -1, 64)
	forged := rewrite(t, path, "forged.ckpt", func(f *tensorfile.File) {
		if !strings.Contains(f.Metadata["nn.plan"], `"noise_multiplier":`+z) {
			t.Fatalf("plan %s lacks z = %s", f.Metadata["nn.plan"], z)
		}
		f.Metadata["nn.plan"] = strings.Replace(f.Metadata["nn.plan"], `"noise_multiplier":`+z, `"noise_multiplier":100`, 1)
		f.Metadata["nn.ledger"] = forgedLedger(t, 0.25, 100, 4)
	})
	if _, err := checkpoint.Load(forged); err != nil {
		t.Fatalf("a consistent whole-run forgery is indistinguishable without a key, yet Load refused it: %v", err)
	}
	if _, err := checkpoint.LoadWithKey(forged, key); !errors.Is(err, checkpoint.ErrAuthentication) {
		t.Errorf("forged keyed checkpoint: err = %v, want ErrAuthentication", err)
	}
	if _, err := checkpoint.LoadWithKey(path, []byte("another key of 16+ bytes")); !errors.Is(err, checkpoint.ErrAuthentication) {
		t.Errorf("wrong key: err = %v, want ErrAuthentication", err)
	}
	plain := filepath.Join(dir, "plain.ckpt")
	if err := checkpoint.Save(plain, c); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.LoadWithKey(plain, key); !errors.Is(err, checkpoint.ErrAuthentication) {
		t.Errorf("checkpoint without a MAC: err = %v, want ErrAuthentication", err)
	}
	if err := checkpoint.SaveWithKey(path, c, []byte("short")); err == nil {
		t.Error("SaveWithKey accepted a 5-byte key")
	}
}
