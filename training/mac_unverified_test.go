package training_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// LoadUnverified reports whether a checkpoint carries a MAC without checking it, and
// ErrNoMAC tells a missing MAC from one that does not verify: what cmd/internal/cli needs
// to refuse a signed checkpoint without the key and to name the right remedy.
func TestLoadUnverifiedAndErrNoMAC(t *testing.T) {
	dir := t.TempDir()
	plain, c := savedCheckpoint(t, dir, 1)
	key := []byte("0123456789abcdef-user-held")
	signed := filepath.Join(dir, "signed.ckpt")
	if err := checkpoint.SaveWithKey(signed, c, key); err != nil {
		t.Fatal(err)
	}
	stripped := rewrite(t, signed, "stripped.ckpt", func(f *tensorfile.File) { delete(f.Metadata, "nn.mac") })
	edited := rewrite(t, signed, "edited.ckpt", func(f *tensorfile.File) {
		mac := []byte(f.Metadata["nn.mac"])
		if mac[0] == 'a' { // another first hex digit
			mac[0] = 'b'
		} else {
			mac[0] = 'a'
		}
		f.Metadata["nn.mac"] = string(mac)
	})
	for _, tc := range []struct {
		path       string
		signed     bool
		keyed      error // LoadWithKey's error: nil, ErrNoMAC or ErrAuthentication alone
		wantsNoMAC bool
	}{
		{plain, false, checkpoint.ErrAuthentication, true},
		{signed, true, nil, false},
		{stripped, false, checkpoint.ErrAuthentication, true},
		{edited, true, checkpoint.ErrAuthentication, false},
	} {
		got, s, err := checkpoint.LoadUnverified(tc.path)
		if err != nil || s != tc.signed || got.Step != c.Step {
			t.Errorf("%s: LoadUnverified signed %v, %v; want signed %v", filepath.Base(tc.path), s, err, tc.signed)
		}
		_, err = checkpoint.LoadWithKey(tc.path, key)
		if !errors.Is(err, tc.keyed) || (tc.keyed == nil) != (err == nil) {
			t.Errorf("%s: LoadWithKey: %v, want %v", filepath.Base(tc.path), err, tc.keyed)
		}
		if errors.Is(err, checkpoint.ErrNoMAC) != tc.wantsNoMAC {
			t.Errorf("%s: LoadWithKey: %v matches ErrNoMAC %v, want %v", filepath.Base(tc.path), err, !tc.wantsNoMAC, tc.wantsNoMAC)
		}
	}
	if _, _, err := checkpoint.LoadUnverified(filepath.Join(dir, "absent.ckpt")); err == nil {
		t.Error("LoadUnverified of a missing file: no error")
	}
}
