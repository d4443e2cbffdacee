package tensorfile

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"slices"
	"strings"
)

// ErrAuthentication reports a file whose keyed MAC is missing or does not verify with
// the key given to WithKey: it was not written with that key, or it was changed since.
var ErrAuthentication = errors.New("nn: checkpoint authentication failed")

// ErrNoMAC is the ErrAuthentication of a file that carries no MAC at all (written
// without a key), as opposed to one whose MAC does not verify; errors matching it match
// ErrAuthentication too.
var ErrNoMAC = errors.New("no MAC (the checkpoint was saved without a key)")

// errMACMismatch is the ErrAuthentication of a MAC that does not verify.
var errMACMismatch = fmt.Errorf("%w: the MAC does not verify (another key, or the file was changed)", ErrAuthentication)

// MACKey is the metadata key of the keyed MAC (WriteFileWithKey): in FormatSigned the MAC
// of the whole stream, in Format (files signed before FormatSigned) the MAC of the metadata
// and the tensors in name order. Decode keeps it in File.Metadata, the mark of a signed
// file. keyHeaderMAC, in FormatSigned only, is the MAC of the header; Decode checks it and
// removes it from File.Metadata.
const (
	MACKey       = "nn.mac"
	keyHeaderMAC = "nn.mac.header"
)

// MinKeyLen is the shortest key WriteFileWithKey and WithKey accept.
const MinKeyLen = 16

// CheckKey reports a key shorter than MinKeyLen, which WriteFileWithKey and WithKey refuse.
func CheckKey(key []byte) error {
	if len(key) < MinKeyLen {
		return fmt.Errorf("nn: checkpoint key of %d bytes, want at least %d", len(key), MinKeyLen)
	}
	return nil
}

// The MACs of FormatSigned: HMAC-SHA256 under the key of a domain string, then the
// stream's length prefix and header with the 64 digits of the checksum and of both MACs
// set to '0' (head), then, for the stream's MAC, the data section as stored.
const (
	macDomainHeader = "privtrain-checkpoint-mac/2 header\n"
	macDomainStream = "privtrain-checkpoint-mac/2 stream\n"
)

func headerMAC(key, head []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(macDomainHeader))
	h.Write(head)
	return h.Sum(nil)
}

// dataMAC returns the stream's MAC fed with everything but the data section, which the
// caller writes into it in file order.
func dataMAC(key, head []byte) hash.Hash {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(macDomainStream))
	h.Write(head)
	return h
}

// checkSignedHeader checks that a FormatSigned header carries its checksum and both
// MACs as 64 lowercase hex digits written plainly, where the MACs can be recomputed.
func checkSignedHeader(l *layout) error {
	for _, k := range []string{MACKey, keyHeaderMAC} {
		v, ok := l.metadata[k]
		if _, err := hex.DecodeString(v); !ok || err != nil || len(v) != 2*sha256.Size || v != strings.ToLower(v) || *l.at(k) < 0 {
			return newFormatError(ErrCorrupt, fmt.Sprintf("format %s: %s is not 64 lowercase hex digits written plainly", FormatSigned, k))
		}
	}
	return nil
}

// signedHead returns a copy of stream[:end], the length prefix and header of a
// FormatSigned stream, with the digits of the checksum and both MACs set to '0'.
func signedHead(stream []byte, end int, l *layout) []byte {
	head := slices.Clone(stream[:end])
	for _, at := range []int{l.checksumAt, l.macAt, l.headerMACAt} {
		copy(head[at:at+2*sha256.Size], strings.Repeat("0", 2*sha256.Size))
	}
	return head
}

// hexMAC decodes a MAC value; a malformed one is a MAC that does not verify.
func hexMAC(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, errMACMismatch
	}
	return b, nil
}

// legacyMACMaxSize bounds the content of a file signed in Format that a keyed read
// (WithKey) checks: its MAC costs a pass of SHA-256 over the whole content (about a second a GiB
// with the CPU's SHA instructions) before it can be refused, and privtrain's models are
// far below it.
const legacyMACMaxSize = 1 << 30

// verifyLegacyMAC checks the MAC of a file signed in Format (before FormatSigned),
// fileMAC's HMAC of the metadata and of the tensors in name order, under key, without
// allocating the tensors: the frame is decompressed into the MAC in that order, a
// decoder started again from the beginning whenever the next tensor lies before the
// current position. Signed files store the tensors by dtype, then by name, so
// name order takes at most one pass per dtype; a file that needs more was not written
// by it and is refused before any pass. dataStart is the offset of the data section in
// the stream, dataSize its size.
func verifyLegacyMAC(in []byte, frame frameInfo, c readConfig, l *layout, dataStart, dataSize uint64) error {
	stored, err := hexMAC(l.metadata[MACKey])
	if err != nil {
		return err
	}
	if size := dataStart + dataSize; size > legacyMACMaxSize {
		return newFormatError(ErrTooLarge, fmt.Sprintf("signed in format %s, whose MAC can only be checked by a pass over all of the content: %d bytes, more than the %d this reader checks so (files SaveWithKey writes now are in format %s)",
			Format, size, legacyMACMaxSize, FormatSigned))
	}
	order := slices.Clone(l.entries)
	slices.SortFunc(order, func(a, b layoutEntry) int { return strings.Compare(a.name, b.name) })
	passes, dtypes, pos := 1, map[DType]bool{}, uint64(0)
	for _, e := range order {
		if e.begin < pos {
			passes++
		}
		pos = e.end
		dtypes[e.dtype] = true
	}
	if passes > max(len(dtypes), 1) {
		return fmt.Errorf("%w: a MAC of format %s over tensors stored in %d runs of name order, which %d dtypes do not need: not a file SaveWithKey wrote", ErrAuthentication, Format, passes, len(dtypes))
	}

	h := hmac.New(sha256.New, c.key)
	str := func(s string) {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	str("privtrain-checkpoint-mac/1")
	for _, k := range slices.Sorted(maps.Keys(l.metadata)) {
		if k != MACKey && k != formatKey && k != checksumKey {
			str(k)
			str(l.metadata[k])
		}
	}
	var dec io.Reader
	var closeDec func()
	defer func() {
		if closeDec != nil {
			closeDec()
		}
	}()
	pos = 0
	for _, e := range order {
		at := dataStart + e.begin
		if dec == nil || at < pos {
			if closeDec != nil {
				closeDec()
			}
			d, err := newDecoder(in, frame, c)
			if err != nil {
				return err
			}
			dec, closeDec, pos = d, d.Close, 0
		}
		if err := copyN(io.Discard, dec, at-pos, c); err != nil {
			return err
		}
		str(e.name)
		str(e.dtype.String())
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(e.shape))))
		for _, d := range e.shape {
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(d)))
		}
		h.Write(binary.LittleEndian.AppendUint64(nil, e.end-e.begin))
		if err := copyN(h, dec, e.end-e.begin, c); err != nil {
			return err
		}
		pos = at + e.end - e.begin
	}
	if !hmac.Equal(h.Sum(nil), stored) {
		return errMACMismatch
	}
	return nil
}

// copyN copies n bytes of the decompressed stream to w; a stream that ends first is
// ErrTruncated-like damage (ErrCorrupt).
func copyN(w io.Writer, dec io.Reader, n uint64, c readConfig) error {
	_, err := io.CopyN(w, dec, int64(n))
	if err == nil {
		return nil
	}
	if zerr := zstdError(err, c); zerr != nil {
		return zerr
	}
	return newFormatError(ErrCorrupt, "safetensors: the content ends before the tensors its header describes")
}
