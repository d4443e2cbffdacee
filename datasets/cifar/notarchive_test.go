package cifar

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A file that is not gzip-compressed, given as the archive, is ErrNotArchive.
func TestNotArchive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(p, []byte("hello, world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load10(p); !errors.Is(err, ErrNotArchive) {
		t.Errorf("Load10: %v", err)
	}
	if _, _, err := Load100(p); !errors.Is(err, ErrNotArchive) {
		t.Errorf("Load100: %v", err)
	}
}
