package tensorfile

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestWriteFileWithKey: a file written under a key reads back under it, marked signed
// (MACKey kept, the header's MAC removed), and is refused under another key; a key of
// fewer than MinKeyLen bytes, nil included, is refused by both sides before any file is
// touched, so that a keyed read can never quietly become an unkeyed one.
func TestWriteFileWithKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "signed.ckpt")
	key := []byte("sixteen byte key")
	if err := WriteFileWithKey(path, interleaved(), key); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path, WithKey(key))
	if err != nil {
		t.Fatalf("ReadFile under the key: %v", err)
	}
	if _, hidden := f.Metadata[keyHeaderMAC]; len(f.Metadata[MACKey]) != 64 || hidden || f.Metadata["user"] != "x" {
		t.Errorf("metadata %v: want the user's entry and %s, without %s", f.Metadata, MACKey, keyHeaderMAC)
	}
	if _, err := ReadFile(path, WithKey([]byte("another sixteen+"))); !errors.Is(err, ErrAuthentication) {
		t.Errorf("ReadFile under another key: %v, want ErrAuthentication", err)
	}
	for _, short := range [][]byte{nil, {}, key[:MinKeyLen-1]} {
		if err := WriteFileWithKey(filepath.Join(dir, "short.ckpt"), interleaved(), short); err == nil {
			t.Errorf("WriteFileWithKey with a %d-byte key: no error", len(short))
		}
		if _, err := ReadFile(path, WithKey(short)); err == nil || errors.Is(err, ErrAuthentication) {
			t.Errorf("ReadFile with a %d-byte key: %v, want the key refused", len(short), err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "short.ckpt")); len(m) != 0 {
		t.Errorf("a refused key left %v", m)
	}
}
