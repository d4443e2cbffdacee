package nn

import (
	"encoding/hex"
	"fmt"
	"io"

	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Save and Load: a Checkpoint to and from a file, through the codec of
// checkpoint_codec.go and package checkpoint's container.

// Save writes c to path atomically (package checkpoint: a temporary file in the same
// directory, synced and renamed over path, mode 0600): a reader of path, or a crash at
// any moment, sees the previous checkpoint or the new one, never a partial file.
func Save(path string, c *Checkpoint) error { return save(path, c, nil) }

// save is Save, with the MAC of SaveWithKey when key is not nil.
func save(path string, c *Checkpoint, key []byte) error {
	f, err := c.file()
	if err != nil {
		return err
	}
	if key != nil {
		f.Metadata[keyMAC] = hex.EncodeToString(fileMAC(f, key))
	}
	return checkpoint.WriteFile(path, f) // "checkpoint: PATH: …" already says what and where
}

// Load reads and verifies the checkpoint at path. A damaged file gives an error matching
// checkpoint.ErrCorrupt (or ErrTruncated, ErrChecksum, ErrNotCheckpoint); a sound
// container that is not a valid training checkpoint gives ErrCheckpoint.
func Load(path string) (*Checkpoint, error) { return load(path, nil) }

// load is Load, checking the MAC of SaveWithKey first when key is not nil.
func load(path string, key []byte) (*Checkpoint, error) {
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		return nil, err // "checkpoint: PATH: …" already says what and where
	}
	if key != nil {
		if err := verifyMAC(path, f, key); err != nil {
			return nil, err
		}
	}
	c, err := fromFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// decode reads a checkpoint from r (for tests and fuzzing).
func decode(r io.Reader, opts ...checkpoint.ReadOption) (*Checkpoint, error) {
	f, err := checkpoint.Decode(r, opts...)
	if err != nil {
		return nil, err
	}
	return fromFile(f)
}
