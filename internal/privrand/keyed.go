package privrand

import (
	crand "crypto/rand"
	"fmt"
)

// NewSecureKey returns a 32-byte key from crypto/rand for [NewKeyed]: the key a
// data-parallel job's rank 0 draws and sends to the other ranks, so that all of them draw
// the same secure sample (docs/distributed.md).
func NewSecureKey() ([32]byte, error) {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		return key, fmt.Errorf("privrand: drawing a key from crypto/rand: %w", err)
	}
	return key, nil
}

// NewKeyed returns a secure Source of stream s keyed with key, which must come from
// [NewSecureKey]: the same key gives the same draws, so processes that share a secret key
// share a stream. It is secure in every other respect: it reports no seed and its encoding
// ([Source.MarshalBinary]) holds no key, so a checkpoint never reveals it.
func NewKeyed(key [32]byte, s Stream) *Source {
	return newSource(key, false, 0, s)
}
