// Package atomicfile writes a file so that readers see either the old file, or no file,
// or the complete new one: never a partial write.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/privtrain/privtrain/internal/safeio"
)

// Write creates path with mode perm and the bytes that write puts into its writer. The
// bytes go to a temporary file ".<name>.tmp-<pid>.<token>-<random>" in the same
// directory (pid and token identify the writing process), which is synced, closed and
// renamed over path only when write returns nil, and the directory is then synced so the
// rename survives a crash. On any error the temporary file is removed and path is left
// as it was.
//
// A crash of the whole process (power loss, SIGKILL) between creating and renaming the
// temporary file leaves it behind. The next successful Write to the same path removes
// such stale temporaries of that path — only names of exactly this pattern for this
// path's name — when their writer is certainly gone: a process that no longer exists, an
// earlier process with the same pid, or a Write of this process that panicked; or when
// the file is older than StaleAge. A temporary file of a writer that may still be running,
// in this process or another, is left alone.
//
// Only a regular file is ever replaced: when path is anything else — a FIFO, a device
// node, a symbolic link (not followed), a directory — Write refuses with an error
// wrapping safeio.ErrNotRegular, before it calls write, and checks again just before the
// rename (what is swapped in between those two checks by another process is replaced:
// a rename cannot be made conditional on what it replaces).
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	if err := safeio.CheckOutput(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-"+strconv.Itoa(os.Getpid())+"."+processToken+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	// The live set is keyed by the cleaned path, as stale looks it up (CreateTemp keeps
	// a "./" that filepath.Join drops).
	key := filepath.Clean(tmp)
	live.Store(key, true)
	defer live.Delete(key)
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
	if err = safeio.CheckOutput(path); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if err = syncDir(dir); err != nil {
		return err
	}
	removeStale(dir, base)
	return nil
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
