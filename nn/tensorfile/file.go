package tensorfile

import (
	"fmt"
	"io"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/safeio"
)

// WriteFile writes f to path atomically: it encodes into a new temporary file in the
// same directory, flushes it to stable storage, and renames it over path, then syncs
// the directory. A reader of path sees the old checkpoint or the new one, never a
// partial one; if WriteFile fails, path is untouched and the temporary file removed.
// A crash of the whole process between creating and renaming the temporary file
// (power loss, SIGKILL) can leave a file named ".<name>.tmp-<pid>.<token>-<random>"
// beside path, which is safe to delete; the next successful WriteFile of path deletes
// it once its writer is gone (internal/atomicfile explains how that is told).
//
// The file gets mode 0600: a checkpoint of a seeded run records the noise seed, and
// anyone holding both could strip the privacy noise from its parameters.
func WriteFile(path string, f *File) error {
	return writeFile(path, f, nil, nil)
}

// WriteFileWithKey is WriteFile in the format FormatSigned: the header carries
// HMAC-SHA256s under key of the header itself (which lays out every tensor) and of the
// whole stream, and ReadFile with WithKey(key) then proves that the file was written by a
// holder of the key and not changed since. f's metadata may not hold MACKey. A key
// shorter than MinKeyLen is refused.
func WriteFileWithKey(path string, f *File, key []byte) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return writeFile(path, f, key, nil)
}

// writeFile is WriteFile, in FormatSigned when key is not nil, with a hook for tests
// that wraps the temporary file's writer, to simulate a disk failing in the middle of a
// write.
func writeFile(path string, f *File, key []byte, wrap func(io.Writer) io.Writer) error {
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		if wrap != nil {
			w = wrap(w)
		}
		return encode(w, f, key)
	})
	if err != nil {
		return fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return nil
}

// ReadFile reads and verifies the checkpoint at path, as Decode does. Errors name the
// path; missing files match fs.ErrNotExist. Anything but a regular file (a FIFO, a
// device, a directory; a symbolic link is followed) is refused with an error matching
// safeio.ErrNotRegular before a byte is read.
func ReadFile(path string, opts ...ReadOption) (*File, error) {
	c, err := newReadConfig(opts)
	if err != nil {
		return nil, err
	}
	fh, err := safeio.Open(path) // a FIFO would block, a device be read up to the limit
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
