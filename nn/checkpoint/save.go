package checkpoint

import (
	"fmt"
	"io"
)

// Save and Load: a Training to and from a file, through the codec of
// codec.go and this package's container.

// Save writes c to path atomically (package checkpoint: a temporary file in the same
// directory, synced and renamed over path, mode 0600): a reader of path, or a crash at
// any moment, sees the previous checkpoint or the new one, never a partial file.
func Save(path string, c *Training) error { return save(path, c, nil) }

// save is Save, with the MAC of SaveWithKey when key is not nil.
func save(path string, c *Training, key []byte) error {
	f, err := c.file()
	if err != nil {
		return err
	}
	return writeFile(path, f, key, nil) // "checkpoint: PATH: …" already says what and where
}

// Load reads and verifies the checkpoint at path. A damaged file gives an error matching
// ErrCorrupt (or ErrTruncated, ErrChecksum, ErrNotCheckpoint); a sound
// container that is not a valid training checkpoint gives ErrInvalid.
func Load(path string) (*Training, error) { return load(path, nil) }

// load is Load, checking the MAC of SaveWithKey first when key is not nil.
func load(path string, key []byte) (*Training, error) {
	var opts []ReadOption
	if key != nil {
		// The container checks the MAC, before it allocates the tensors.
		opts = append(opts, withKey(key))
	}
	f, err := ReadFile(path, opts...)
	if err != nil {
		return nil, err // "checkpoint: PATH: …" already says what and where
	}
	c, err := fromFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// LoadUnverified is Load that also reports whether the file carries the MAC of
// SaveWithKey, which it does not check: signed is true for a checkpoint written with a
// key. A caller without the key uses it to refuse a signed checkpoint (whose MAC it
// cannot check) or to load one knowingly unchecked; a caller with the key uses
// LoadWithKey.
func LoadUnverified(path string) (c *Training, signed bool, err error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, false, err // "checkpoint: PATH: …" already says what and where
	}
	_, signed = f.Metadata[keyMAC]
	if c, err = fromFile(f); err != nil {
		return nil, signed, fmt.Errorf("%s: %w", path, err)
	}
	return c, signed, nil
}

// DecodeTraining reads a training checkpoint from r, with the checks of Load (the file
// name aside); opts are the container's (WithMaxSize).
func DecodeTraining(r io.Reader, opts ...ReadOption) (*Training, error) {
	f, err := Decode(r, opts...)
	if err != nil {
		return nil, err
	}
	return fromFile(f)
}
