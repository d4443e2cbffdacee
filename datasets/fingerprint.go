package datasets

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
)

// ContentFingerprint returns the hex SHA-256 of ds's content: its example shape, number of
// classes and size, then every example's values (float32, little-endian bits) and label
// (uint32, little-endian) in index order. Two data sets share it only if they hold the same
// examples with the same labels in the same order; a change of one pixel or one label
// changes it. It reads every example once (about 0.3 s for Fashion-MNIST's 60,000 images):
// compute it once per load and pass it on. The layout, which the test pins against a
// hand-built hash, is:
//
//	"privtrain-dataset-v1\x00" | uint32 len(shape) | uint32 each dim | uint32 classes | uint64 n
//	then for i in 0..n-1: float32 bits of each value | uint32 label
func ContentFingerprint(ds Dataset) string {
	h := sha256.New()
	h.Write([]byte("privtrain-dataset-v1\x00"))
	shape := ds.Shape()
	var b4 [4]byte
	put := func(v uint32) {
		binary.LittleEndian.PutUint32(b4[:], v)
		h.Write(b4[:])
	}
	put(uint32(len(shape)))
	for _, d := range shape {
		put(uint32(d))
	}
	put(uint32(ds.NumClasses()))
	var b8 [8]byte
	binary.LittleEndian.PutUint64(b8[:], uint64(ds.Len()))
	h.Write(b8[:])
	x := make([]float32, Size(ds))
	buf := make([]byte, 4*len(x)+4)
	for i := range ds.Len() {
		label := ds.Example(i, x)
		for j, v := range x {
			binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(v))
		}
		binary.LittleEndian.PutUint32(buf[4*len(x):], uint32(label))
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}
