package checkpoint

import (
	"fmt"
	"io"

	"github.com/privtrain/privtrain/nn/tensorfile"
)

// Save and Load: a Training to and from a file, through the codec of codec.go and the
// container of package tensorfile.

// Save writes c to path atomically (tensorfile.WriteFile: a temporary file in the same
// directory, synced and renamed over path, mode 0600): a reader of path, or a crash at
// any moment, sees the previous checkpoint or the new one, never a partial file.
func Save(path string, c *Training) error { return save(path, c, nil) }

// SaveWithKey is Save with HMAC-SHA256s, under key, of everything the checkpoint holds
// (every tensor and metadata entry, and the header that lays them out), in the format
// tensorfile.FormatSigned. LoadWithKey with the same key then proves that the file was written by a
// holder of the key and not changed since: without the key nobody can forge or edit a
// checkpoint — its ledger included — that LoadWithKey accepts. Keep the key apart from the
// checkpoints (cmd/train reads it from PRIVTRAIN_CHECKPOINT_KEY). Load, without a key,
// still reads the file but cannot check the MAC.
func SaveWithKey(path string, c *Training, key []byte) error {
	if err := tensorfile.CheckKey(key); err != nil {
		return err
	}
	return save(path, c, key)
}

// save is Save, with the MAC of SaveWithKey when key is not nil.
func save(path string, c *Training, key []byte) error {
	f, err := c.file()
	if err != nil {
		return err
	}
	// "checkpoint: PATH: …" already says what and where
	if key != nil {
		return tensorfile.WriteFileWithKey(path, f, key)
	}
	return tensorfile.WriteFile(path, f)
}

// Load reads and verifies the checkpoint at path. A damaged file gives an error matching
// ErrCorrupt (or ErrTruncated, ErrChecksum, ErrNotCheckpoint); a sound
// container that is not a valid training checkpoint gives ErrInvalid.
func Load(path string) (*Training, error) { return load(path, nil) }

// LoadWithKey is Load for a checkpoint written by SaveWithKey: it refuses, with
// ErrAuthentication, a file without a MAC or whose MAC does not verify under key. The
// MAC is checked before the tensors are allocated: for tensorfile.FormatSigned, the
// header's MAC, which commits to every size, then the whole stream's as it is
// decompressed; for a file signed in tensorfile.Format (before FormatSigned), by
// decompressing the tensors in the MAC's order
// without keeping them (at most as many passes as the file has dtypes).
func LoadWithKey(path string, key []byte) (*Training, error) {
	if err := tensorfile.CheckKey(key); err != nil {
		return nil, err
	}
	return load(path, key)
}

// load is Load, checking the MAC of SaveWithKey first when key is not nil.
func load(path string, key []byte) (*Training, error) {
	var opts []tensorfile.ReadOption
	if key != nil {
		// The container checks the MAC, before it allocates the tensors.
		opts = append(opts, tensorfile.WithKey(key))
	}
	f, err := tensorfile.ReadFile(path, opts...)
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
	f, err := tensorfile.ReadFile(path)
	if err != nil {
		return nil, false, err // "checkpoint: PATH: …" already says what and where
	}
	_, signed = f.Metadata[tensorfile.MACKey]
	if c, err = fromFile(f); err != nil {
		return nil, signed, fmt.Errorf("%s: %w", path, err)
	}
	return c, signed, nil
}

// DecodeTraining reads a training checkpoint from r, with the checks of Load (the file
// name aside); opts are the container's (tensorfile.WithMaxSize).
func DecodeTraining(r io.Reader, opts ...tensorfile.ReadOption) (*Training, error) {
	f, err := tensorfile.Decode(r, opts...)
	if err != nil {
		return nil, err
	}
	return fromFile(f)
}
