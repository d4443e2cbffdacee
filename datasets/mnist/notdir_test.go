package mnist

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file given as the directory of the IDX files is named as a file, not reported
// missing (os.DirFS of a file finds nothing in it).
func TestLoadFileNotDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "train-images-idx3-ubyte")
	if err := os.WriteFile(p, []byte{0, 0, 8, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, load := range []func(string) error{
		func(d string) error { _, _, err := Load(d); return err },
		func(d string) error { _, _, err := LoadFashion(d); return err },
		func(d string) error { _, err := LoadTrain(d); return err },
		func(d string) error { _, err := LoadFashionTrain(d); return err },
	} {
		err := load(p)
		if err == nil || !strings.Contains(err.Error(), p+" is a file, not a directory") || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%v", err)
		}
	}
}
