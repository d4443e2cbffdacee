package tensorfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// TestReadFileRefusesSpecialFiles: a FIFO or a device node given as a checkpoint is
// refused at once, naming it, having read nothing from it (the limit is the default
// 4 GiB: a read of the device node would allocate that much before failing). Before,
// ReadFile opened both plainly: the FIFO blocked for ever, and a device (whose size is
// 0) was read up to the limit: 9.75 GB and 30 s for /dev/zero. A symbolic link to a
// checkpoint is read (a link names what the user chose to read).
func TestReadFileRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	specials := safeiotest.Specials(t, dir, "*")
	for _, sp := range specials.List {
		if sp.Name == "symlink" {
			continue
		}
		var err error
		got := safeiotest.Allocated(func() { _, err = ReadFile(sp.Path) })
		if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), sp.Path) {
			t.Errorf("ReadFile of a %s: %v, want ErrNotRegular naming it", sp.Name, err)
		}
		if got > 1<<20 {
			t.Errorf("ReadFile of a %s allocated %d MiB", sp.Name, got>>20)
		}
	}
	specials.Unchanged(t)
	ckpt := filepath.Join(dir, "run.ckpt")
	if err := WriteFile(ckpt, version(1)); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "latest.ckpt")
	if err := os.Symlink("run.ckpt", link); err != nil {
		t.Fatal(err)
	}
	wantVersion(t, link, 1)
}
