package checkpoint

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFile writes f to path atomically: it encodes into a new temporary file in the
// same directory, flushes it to stable storage, and renames it over path, then syncs
// the directory. A reader of path sees the old checkpoint or the new one, never a
// partial one; if WriteFile fails, path is untouched and the temporary file removed.
// A crash of the whole process between creating and renaming the temporary file
// (power loss, SIGKILL) can leave a file named ".<name>.tmp-<random>" beside path,
// which is safe to delete.
//
// The file gets mode 0600: a checkpoint of a seeded run records the noise seed, and
// anyone holding both could strip the privacy noise from its parameters.
func WriteFile(path string, f *File) error {
	return writeFile(path, f, nil)
}

// writeFile is WriteFile with a hook for tests that wraps the temporary file's writer,
// to simulate a disk failing in the middle of a write.
func writeFile(path string, f *File, wrap func(io.Writer) io.Writer) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("checkpoint: %s: %w", path, err)
		}
	}()
	var w io.Writer = tmp
	if wrap != nil {
		w = wrap(tmp)
	}
	if err = encode(w, f); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if beforeRename != nil {
		beforeRename(tmp.Name())
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// beforeRename, when set by a test, runs between the temporary file's close and its
// rename, where a crash is simulated.
var beforeRename func(tmpPath string)

// syncDir makes a rename in dir durable. Windows cannot open directories for syncing
// and orders renames itself.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

// ReadFile reads and verifies the checkpoint at path, as Decode does. Errors name the
// path; missing files match fs.ErrNotExist.
func ReadFile(path string, opts ...ReadOption) (*File, error) {
	c, err := newReadConfig(opts)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer fh.Close()
	if st, err := fh.Stat(); err == nil && st.Size() > c.maxCompressed() {
		return nil, fmt.Errorf("checkpoint: %s: %w", path,
			newFormatError(ErrTooLarge, fmt.Sprintf("file of %d bytes exceeds %d", st.Size(), c.maxCompressed())))
	}
	in, err := io.ReadAll(io.LimitReader(fh, c.maxCompressed()+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	f, err := decodeBytes(in, c)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return f, nil
}
