// Package atomicfile writes a file so that readers see either the old file, or no file,
// or the complete new one: never a partial write.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// Write creates path with mode perm and the bytes that write puts into its writer. The
// bytes go to a temporary file ".<name>.tmp-<random>" in the same directory, which is
// synced, closed and renamed over path only when write returns nil, and the directory is
// then synced so the rename survives a crash. On any error the temporary file is removed
// and path is left as it was. A crash of the whole process (power loss, SIGKILL) between
// creating and renaming the temporary file can leave it behind; it is safe to delete.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return err
	}
	if BeforeRename != nil {
		BeforeRename(tmp)
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// BeforeRename, when set by a test, runs between the temporary file's close and its
// rename, where a crash can be simulated. It must be nil outside tests.
var BeforeRename func(tmpPath string)

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
