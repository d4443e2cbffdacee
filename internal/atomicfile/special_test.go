package atomicfile

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// TestWriteReplacesOnlyRegularFiles: Write never replaces what is not a regular file at
// its path (a FIFO, a device node, a symbolic link, a directory): it refuses, naming
// the path and what is there, before calling the writer, and leaves it (and a link's
// target) as it was. Before, the rename replaced a FIFO or a device node (as root,
// `train -checkpoint /dev/null` replaced /dev/null) and a symbolic link.
func TestWriteReplacesOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	specials := safeiotest.Specials(t, dir, "*")
	list := append(specials.List, safeiotest.Special{Name: "directory", Path: t.TempDir(), Kind: "directory"})
	for _, sp := range list {
		called := false
		err := Write(sp.Path, 0o600, func(w io.Writer) error {
			called = true
			_, err := w.Write([]byte("new"))
			return err
		})
		if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), sp.Path) || !strings.Contains(err.Error(), sp.Kind) {
			t.Errorf("Write over a %s: %v, want ErrNotRegular naming %s and %q", sp.Name, err, sp.Path, sp.Kind)
		}
		if called {
			t.Errorf("Write over a %s ran the writer: the work is done before the refusal", sp.Name)
		}
	}
	specials.Unchanged(t)
}
