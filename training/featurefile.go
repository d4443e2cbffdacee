package training

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/safeio"
)

// The feature cache file (featurecache.go) holds one dataset's front-end features:
//
//	magic    8 bytes  "PTFEATS\n"
//	version  uint32   1
//	dtype    uint32   1 (float32 values)
//	key      32 bytes the cache key (featureKey) the features were computed for
//	count    uint64   number of examples
//	ndim     uint32   1 … 8
//	dims     ndim × uint32, each ≥ 1: the per-example feature shape
//	payload  count·Prod(dims) float32 values, example-major
//	checksum 32 bytes SHA-256 of everything before it, or, when the cache has a key
//	                  (TrainerConfig.FeatureCache.Key), HMAC-SHA256 under that key of
//	                  featureMACDomain and everything before it
//
// all integers and values little-endian. The SHA-256 catches damage; only the keyed MAC
// catches an edit, since whoever edits the payload can recompute a SHA-256.
const (
	featureMagic       = "PTFEATS\n"
	featureFileVersion = 1
	featureFloat32     = 1
	featureMaxDims     = 8
	featureFixedHeader = 8 + 4 + 4 + 32 + 8 + 4
	featureMaxHeader   = featureFixedHeader + 4*featureMaxDims
	// featureMaxValues bounds what a header may announce (2³⁴ values, 64 GiB), so that a
	// corrupt count cannot make the reader allocate without limit before it checks the
	// file's size.
	featureMaxValues = 1 << 34
)

// featureMACDomain starts what a keyed feature file's MAC covers, so that no MAC of
// another kind of file under the same key (checkpoints share it) is ever a valid one.
const featureMACDomain = "privtrain-feature-cache-mac/1\n"

// newFeatureSum returns the hash of a feature file's checksum: SHA-256 without a key,
// HMAC-SHA256 under key with one.
func newFeatureSum(key []byte) hash.Hash {
	if key == nil {
		return sha256.New()
	}
	h := hmac.New(sha256.New, key)
	io.WriteString(h, featureMACDomain)
	return h
}

// errFeatureFile marks a cache file that is not a valid feature file.
var errFeatureFile = errors.New("not a valid feature cache file")

// featureHeader is a feature file's header.
type featureHeader struct {
	key   [32]byte
	count int
	shape []int
}

// values is the number of float32 values in the payload.
func (h featureHeader) values() int {
	n := h.count
	for _, d := range h.shape {
		n *= d
	}
	return n
}

// encode returns the header's bytes.
func (h featureHeader) encode() []byte {
	b := make([]byte, 0, featureFixedHeader+4*len(h.shape))
	b = append(b, featureMagic...)
	b = binary.LittleEndian.AppendUint32(b, featureFileVersion)
	b = binary.LittleEndian.AppendUint32(b, featureFloat32)
	b = append(b, h.key[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.count))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.shape)))
	for _, d := range h.shape {
		b = binary.LittleEndian.AppendUint32(b, uint32(d))
	}
	return b
}

// parseFeatureHeader decodes the header at the start of b and returns it with its length.
func parseFeatureHeader(b []byte) (featureHeader, int, error) {
	var h featureHeader
	if len(b) < featureFixedHeader {
		return h, 0, fmt.Errorf("%w: %d bytes, shorter than a header", errFeatureFile, len(b))
	}
	if string(b[:8]) != featureMagic {
		return h, 0, fmt.Errorf("%w: wrong magic %q", errFeatureFile, b[:8])
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[8:]); v != featureFileVersion {
		return h, 0, fmt.Errorf("%w: version %d, this program reads version %d", errFeatureFile, v, featureFileVersion)
	}
	if t := le.Uint32(b[12:]); t != featureFloat32 {
		return h, 0, fmt.Errorf("%w: value type %d, want %d (float32)", errFeatureFile, t, featureFloat32)
	}
	copy(h.key[:], b[16:48])
	count := le.Uint64(b[48:])
	ndim := le.Uint32(b[56:])
	if ndim < 1 || ndim > featureMaxDims {
		return h, 0, fmt.Errorf("%w: %d dimensions, want 1 to %d", errFeatureFile, ndim, featureMaxDims)
	}
	n := featureFixedHeader + 4*int(ndim)
	if len(b) < n {
		return h, 0, fmt.Errorf("%w: header truncated after %d bytes", errFeatureFile, len(b))
	}
	if count > featureMaxValues {
		return h, 0, fmt.Errorf("%w: %d examples", errFeatureFile, count)
	}
	total := count
	h.shape = make([]int, ndim)
	for i := range h.shape {
		d := le.Uint32(b[featureFixedHeader+4*i:])
		if d == 0 || uint64(d) > featureMaxValues {
			return h, 0, fmt.Errorf("%w: dimension %d is %d", errFeatureFile, i, d)
		}
		h.shape[i] = int(d)
		if total *= uint64(d); total > featureMaxValues {
			return h, 0, fmt.Errorf("%w: %d examples of shape %v… exceed %d values", errFeatureFile, count, h.shape[:i+1], featureMaxValues)
		}
	}
	h.count = int(count)
	return h, n, nil
}

// writeFeatureFile writes h and the h.values() values that next delivers, in chunks, to
// path, atomically, readable by its owner only: the features are as private as the data.
// macKey, if not nil, keys the checksum (newFeatureSum).
func writeFeatureFile(path string, h featureHeader, macKey []byte, next func() []float32) error {
	return atomicfile.Write(path, 0o600, func(w io.Writer) error {
		sum := newFeatureSum(macKey)
		bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<20)
		if _, err := bw.Write(h.encode()); err != nil {
			return err
		}
		var buf []byte
		for left := h.values(); left > 0; {
			x := next()
			if len(x) == 0 || len(x) > left {
				return fmt.Errorf("training: feature file: %d values delivered with %d to go", len(x), left)
			}
			left -= len(x)
			buf = appendFloat32s(buf[:0], x)
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		_, err := w.Write(sum.Sum(nil))
		return err
	})
}

// readFeatureFile reads the values of the feature file at path, which must have been
// written for key, count examples and per-example shape, and with macKey (nil for none).
// A file that is missing gives an error satisfying errors.Is(err, fs.ErrNotExist); one
// that is corrupt, truncated, edited, not a regular file or written for other data or
// another front end, one wrapping errFeatureFile.
func readFeatureFile(path string, key [32]byte, count int, shape []int, macKey []byte) ([]float32, error) {
	f, err := safeio.Open(path)
	if errors.Is(err, safeio.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", errFeatureFile, err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	head := make([]byte, min(st.Size(), featureMaxHeader))
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, err
	}
	h, n, err := parseFeatureHeader(head)
	if err != nil {
		return nil, err
	}
	if h.key != key {
		return nil, fmt.Errorf("%w: written for other data or another front end (key %x…, want %x…)", errFeatureFile, h.key[:8], key[:8])
	}
	if h.count != count || !slices.Equal(h.shape, shape) {
		return nil, fmt.Errorf("%w: %d examples of shape %v, want %d of %v", errFeatureFile, h.count, h.shape, count, shape)
	}
	values := h.values()
	if want := int64(n) + 4*int64(values) + sha256.Size; st.Size() != want {
		return nil, fmt.Errorf("%w: %d bytes, want %d (truncated or extended)", errFeatureFile, st.Size(), want)
	}
	sum := newFeatureSum(macKey)
	sum.Write(head[:n])
	if _, err := f.Seek(int64(n), io.SeekStart); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(io.TeeReader(io.LimitReader(f, 4*int64(values)), sum), 1<<20)
	out := make([]float32, values)
	buf := make([]byte, 1<<20)
	for lo := 0; lo < values; {
		k := min(len(buf)/4, values-lo)
		if _, err := io.ReadFull(r, buf[:4*k]); err != nil {
			return nil, fmt.Errorf("%w: payload: %v", errFeatureFile, err)
		}
		for i := range k {
			out[lo+i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		lo += k
	}
	var stored [sha256.Size]byte
	if _, err := io.ReadFull(f, stored[:]); err != nil {
		return nil, fmt.Errorf("%w: checksum: %v", errFeatureFile, err)
	}
	if !hmac.Equal(sum.Sum(nil), stored[:]) {
		if macKey != nil {
			return nil, fmt.Errorf("%w: the MAC does not verify under the key (written without it or with another, or edited)", errFeatureFile)
		}
		return nil, fmt.Errorf("%w: SHA-256 checksum mismatch (the file is corrupt)", errFeatureFile)
	}
	return out, nil
}

// appendFloat32s appends the little-endian bits of x to b: the file's payload, and the
// raw examples as the cache key hashes them.
func appendFloat32s(b []byte, x []float32) []byte {
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
