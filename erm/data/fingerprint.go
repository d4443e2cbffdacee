package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
)

// Fingerprint is the content fingerprint of the data set, the key under which the
// budget store records the runs on it (cmd/erm fingerprints its data as loaded, before
// Normalize, so that raw and normalised runs on one file are one data set): the hex
// SHA-256 of
//
//	"privtrain-erm-data-v1\x00" | uint64 n | uint64 d | for each row: d float64 features | float64 label
//
// all little-endian IEEE 754 bits, in row order. It is not datasets.ContentFingerprint
// (float32 values and integer labels): these data are float64 with real labels. The
// layout is fixed: existing budget stores are keyed by it (docs/budget.md).
func (ds *Dataset) Fingerprint() string {
	h := sha256.New()
	h.Write([]byte("privtrain-erm-data-v1\x00"))
	n, d := ds.Len(), ds.Dim()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(uint64(n))
	put(uint64(d))
	for i := range n {
		for _, v := range ds.Row(i) {
			put(math.Float64bits(v))
		}
		put(math.Float64bits(ds.Y[i]))
	}
	return hex.EncodeToString(h.Sum(nil))
}
