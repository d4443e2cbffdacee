package training

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// DatasetFingerprint computes the fingerprint of ds under name.
func DatasetFingerprint(name string, ds datasets.Dataset) checkpoint.Fingerprint {
	h := sha256.New()
	var b [4]byte
	for _, l := range datasets.Labels(ds) {
		binary.LittleEndian.PutUint32(b[:], uint32(l))
		h.Write(b[:])
	}
	return checkpoint.Fingerprint{
		Name:    name,
		Size:    ds.Len(),
		Shape:   ds.Shape(),
		Classes: ds.NumClasses(),
		Labels:  hex.EncodeToString(h.Sum(nil)),
	}
}
