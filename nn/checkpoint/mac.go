package checkpoint

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"maps"
	"slices"
)

// ErrAuthentication reports a checkpoint whose keyed MAC is missing or does not verify
// with the key given to LoadWithKey: it was not written with that key, or it was changed
// since.
var ErrAuthentication = errors.New("nn: checkpoint authentication failed")

// ErrNoMAC is the ErrAuthentication of a checkpoint that carries no MAC at all (saved
// without a key), as opposed to one whose MAC does not verify; errors matching it match
// ErrAuthentication too.
var ErrNoMAC = errors.New("no MAC (the checkpoint was saved without a key)")

// keyMAC is the metadata key of the keyed MAC (SaveWithKey).
const keyMAC = "nn.mac"

// MinKeyLen is the shortest key SaveWithKey and LoadWithKey accept.
const MinKeyLen = 16

// SaveWithKey is Save with an HMAC-SHA256, under key, of everything the checkpoint holds
// (every tensor and metadata entry). LoadWithKey with the same key then proves that the
// file was written by a holder of the key and not changed since: without the key nobody
// can forge or edit a checkpoint — its ledger included — that LoadWithKey accepts. Keep
// the key apart from the checkpoints (cmd/train reads it from PRIVTRAIN_CHECKPOINT_KEY).
// Load, without a key, still reads the file but cannot check the MAC.
func SaveWithKey(path string, c *Training, key []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return save(path, c, key)
}

// LoadWithKey is Load for a checkpoint written by SaveWithKey: it refuses, with
// ErrAuthentication, a file without a MAC or whose MAC does not verify under key.
func LoadWithKey(path string, key []byte) (*Training, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return load(path, key)
}

func checkKey(key []byte) error {
	if len(key) < MinKeyLen {
		return fmt.Errorf("nn: checkpoint key of %d bytes, want at least %d", len(key), MinKeyLen)
	}
	return nil
}

// verifyMAC checks the MAC that SaveWithKey stored in f, read from path, under key.
func verifyMAC(path string, f *File, key []byte) error {
	stored, ok := f.Metadata[keyMAC]
	if !ok {
		return fmt.Errorf("%s: %w: %w", path, ErrAuthentication, ErrNoMAC)
	}
	mac, err := hex.DecodeString(stored)
	if err != nil || !hmac.Equal(mac, fileMAC(f, key)) {
		return fmt.Errorf("%s: %w: the MAC does not verify (another key, or the file was changed)", path, ErrAuthentication)
	}
	return nil
}

// fileMAC is HMAC-SHA256 under key of f's tensors and metadata (less the MAC itself), in
// a canonical, length-prefixed order.
func fileMAC(f *File, key []byte) []byte {
	h := hmac.New(sha256.New, key)
	str := func(h hash.Hash, s string) {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	str(h, "privtrain-checkpoint-mac/1")
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		if k != keyMAC {
			str(h, k)
			str(h, f.Metadata[k])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Tensors)) {
		t := f.Tensors[name]
		str(h, name)
		str(h, t.DType.String())
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(t.Shape))))
		for _, d := range t.Shape {
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(d)))
		}
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(t.Data))))
		h.Write(t.Data)
	}
	return h.Sum(nil)
}
