package tensorfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// Format is the value of the format marker every checkpoint without a MAC carries in
// its metadata (and every signed one written before FormatSigned existed).
const Format = "privtrain-checkpoint/1"

// FormatSigned is the format marker of a checkpoint signed with a key (WriteFileWithKey):
// Format with two MACs in the header, one of the header (which commits to every size,
// so it is checked before anything is allocated) and one of the whole stream in the
// order the file stores it (checked as it streams). See doc.go.
const FormatSigned = "privtrain-checkpoint/2"

// Reserved metadata keys, set by Encode and removed by Decode.
const (
	formatKey    = "privtrain.format"
	checksumKey  = "privtrain.sha256"
	formatFamily = "privtrain-checkpoint/"
)

// DefaultMaxSize is the largest decompressed checkpoint Decode and ReadFile accept
// unless told otherwise with WithMaxSize.
const DefaultMaxSize = 4 << 30

// File is the content of a checkpoint: named tensors and string metadata.
type File struct {
	Tensors  map[string]Tensor
	Metadata map[string]string
}

// ReadOption configures Decode and ReadFile.
type ReadOption func(*readConfig)

type readConfig struct {
	maxSize int64
	// key, when not nil, is the key whose MAC the content must carry: Decode refuses
	// (ErrAuthentication) content without a MAC or whose MAC does not verify, checking
	// what it can before it allocates the data (see inflate).
	key   []byte
	keyed bool // WithKey was given: key must pass CheckKey
}

// WithKey makes Decode and ReadFile verify the content's MAC under key, the key the file
// was written with (WriteFileWithKey): they refuse, with ErrAuthentication, content
// without a MAC (ErrNoMAC) or whose MAC does not verify, checking it before the tensors
// are allocated (see the package documentation). A key shorter than MinKeyLen is refused.
func WithKey(key []byte) ReadOption {
	return func(c *readConfig) { c.key, c.keyed = key, true }
}

// WithMaxSize sets the largest decompressed size (safetensors header and data) that
// Decode and ReadFile accept; larger inputs fail with ErrTooLarge before they are
// fully decompressed. The default is DefaultMaxSize. Memory use while decoding is the
// decompressed size the file's safetensors header describes (at most this, checked
// before it is allocated), plus the compressed size and the zstd window (≤ 128 MiB).
func WithMaxSize(n int64) ReadOption {
	return func(c *readConfig) { c.maxSize = n }
}

func newReadConfig(opts []ReadOption) (readConfig, error) {
	c := readConfig{maxSize: DefaultMaxSize}
	for _, o := range opts {
		o(&c)
	}
	if c.maxSize < 16 {
		return c, fmt.Errorf("checkpoint: maximum size %d is below the 16-byte minimum", c.maxSize)
	}
	if c.keyed {
		if err := CheckKey(c.key); err != nil {
			return c, err
		}
	}
	return c, nil
}

// maxCompressed bounds the compressed size of a checkpoint whose content is at most
// c.maxSize bytes: zstd never expands by more than a 3-byte header per 128 KiB block,
// plus the frame header and checksum.
func (c readConfig) maxCompressed() int64 {
	const maxInt64 = 1<<63 - 1
	extra := c.maxSize/(maxBlockSize/4) + 64
	if c.maxSize > maxInt64-extra {
		return maxInt64 - 1
	}
	return c.maxSize + extra
}

// Encode writes f to w as a checkpoint: a safetensors byte stream carrying the format
// marker and a SHA-256 checksum in its metadata, compressed as one zstd frame with a
// content checksum, followed by a trailer holding the SHA-256 of that frame (see the
// package documentation for the exact layout). Encode is deterministic: the same File
// gives the same bytes.
//
// Tensor names must be non-empty valid UTF-8 other than "__metadata__"; metadata keys
// and values must be valid UTF-8, and the keys "privtrain.format" and "privtrain.sha256"
// are reserved. Every tensor must hold exactly the bytes its dtype and shape require.
// Encode writes nothing if f is invalid.
func Encode(w io.Writer, f *File) error {
	if err := encode(w, f, nil); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// encode is Encode without the package prefix on its errors; with a key it writes the
// format FormatSigned, whose MACs (keyHeaderMAC, MACKey) it computes under key.
func encode(w io.Writer, f *File, key []byte) error {
	if f == nil {
		return errors.New("nil File")
	}
	entries, err := planEntries(f.Tensors)
	if err != nil {
		return err
	}
	zeros := strings.Repeat("0", sha256.Size*2)
	metadata := map[string]string{formatKey: Format, checksumKey: zeros}
	if key != nil {
		metadata[formatKey], metadata[MACKey], metadata[keyHeaderMAC] = FormatSigned, zeros, zeros
	}
	for k, v := range f.Metadata {
		if k == formatKey || k == checksumKey || k == keyHeaderMAC || (key != nil && k == MACKey) {
			return fmt.Errorf("metadata key %q is reserved", k)
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("metadata %q: key and value must be valid UTF-8", k)
		}
		metadata[k] = v
	}
	header, at, err := encodeHeader(metadata, entries)
	if err != nil {
		return err
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))

	if key != nil {
		// The MACs cover the stream with the digits of both and of the checksum set to
		// '0', as it is now (doc.go).
		head := append(prefix[:], header...)
		hm, dm := headerMAC(key, head), dataMAC(key, head)
		for _, e := range entries {
			dm.Write(f.Tensors[e.name].Data)
		}
		hex.Encode(header[at[keyHeaderMAC]:], hm)
		hex.Encode(header[at[MACKey]:], dm.Sum(nil))
	}
	// The checksum covers the whole stream with its own 64 digits set to '0' (doc.go).
	h := sha256.New()
	h.Write(prefix[:])
	h.Write(header)
	for _, e := range entries {
		h.Write(f.Tensors[e.name].Data)
	}
	hex.Encode(header[at[checksumKey]:], h.Sum(nil))

	// Trained float weights barely compress at any level (ratio ≈ 1.0 on Gaussian
	// values, measured in BenchmarkEncode); the fastest level still squeezes the zeros
	// of fresh optimizer state and is 5× faster than the default.
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return err
	}
	// Declaring the content size lets the decoder check it and sizes the window to it.
	total := int64(len(prefix) + len(header))
	for _, e := range entries {
		total += int64(len(f.Tensors[e.name].Data))
	}
	frameSum := sha256.New()
	zw.ResetContentSize(io.MultiWriter(w, frameSum), total)
	write := func(b []byte) {
		if err == nil {
			_, err = zw.Write(b)
		}
	}
	write(prefix[:])
	write(header)
	for _, e := range entries {
		write(f.Tensors[e.name].Data)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		_, err = w.Write(appendTrailer(nil, frameSum.Sum(nil)))
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// planEntries validates the tensors and lays them out in safetensors' writing order.
func planEntries(tensors map[string]Tensor) ([]layoutEntry, error) {
	entries := make([]layoutEntry, 0, len(tensors))
	for name, t := range tensors {
		switch {
		case name == "":
			return nil, errors.New("empty tensor name")
		case name == metadataKey:
			return nil, fmt.Errorf("tensor name %q is reserved", name)
		case !utf8.ValidString(name):
			return nil, fmt.Errorf("tensor name %q is not valid UTF-8", name)
		}
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		for _, d := range t.Shape {
			if d > maxSizeT {
				return nil, fmt.Errorf("tensor %q: dimension %d exceeds 2^48-1", name, d)
			}
		}
		entries = append(entries, layoutEntry{name: name, dtype: t.DType, shape: t.Shape})
	}
	slices.SortFunc(entries, writeOrder)
	var off uint64
	for i := range entries {
		entries[i].begin = off
		off += uint64(len(tensors[entries[i].name].Data))
		entries[i].end = off
	}
	return entries, nil
}

// Decode reads a checkpoint written by Encode from r, which it reads to the end, and
// verifies it: the zstd frame and its content checksum, the safetensors layout, the
// format marker, the SHA-256 of the content and the trailer's SHA-256 of the frame.
// Errors match ErrNotCheckpoint, ErrUnsupportedVersion, ErrCorrupt (ErrTruncated,
// ErrChecksum) or ErrTooLarge with errors.Is, or are the reader's own error.
//
// The tensors of the returned File share one buffer; each Data slice has its capacity
// clipped to its length, so appending to one cannot overwrite another. Metadata holds
// the user's entries only, without the reserved keys.
func Decode(r io.Reader, opts ...ReadOption) (*File, error) {
	c, err := newReadConfig(opts)
	if err != nil {
		return nil, err
	}
	in, err := io.ReadAll(io.LimitReader(r, c.maxCompressed()+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read: %w", err)
	}
	f, err := decodeBytes(in, c)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return f, nil
}

// decodeBytes decodes a whole compressed checkpoint held in memory.
func decodeBytes(in []byte, c readConfig) (*File, error) {
	if int64(len(in)) > c.maxCompressed() {
		return nil, newFormatError(ErrTooLarge, fmt.Sprintf("compressed input exceeds %d bytes", c.maxCompressed()))
	}
	if err := checkMagic(in); err != nil {
		return nil, err
	}
	frame, err := walkFrame(in)
	if err != nil {
		return nil, err
	}
	// A changed frame under an intact trailer is refused before anything is
	// decompressed; the trailer's other faults wait until the content is known (below).
	trailerErr := checkTrailer(in[:frame.length], in[frame.length:])
	if errors.Is(trailerErr, ErrChecksum) {
		return nil, trailerErr
	}
	stream, err := inflate(in, frame, c)
	if err != nil {
		return nil, err
	}
	f, err := decodeStream(stream)
	if err != nil {
		return nil, err
	}
	// Problems of the container that a foreign stream could have too are reported
	// after its content has been identified as ours.
	if !frame.hasChecksum {
		return nil, newFormatError(ErrCorrupt, "zstd frame has no content checksum")
	}
	if trailerErr != nil {
		return nil, trailerErr
	}
	return f, nil
}

// checkMagic rejects input that does not start with a zstd frame, recognising an
// empty or cut-off file and an uncompressed safetensors file.
func checkMagic(in []byte) error {
	if len(in) < len(zstdMagic) && strings.HasPrefix(zstdMagic, string(in)) {
		return newFormatError(ErrTruncated, fmt.Sprintf("only %d bytes", len(in)))
	}
	if strings.HasPrefix(string(in[:min(len(in), len(zstdMagic))]), zstdMagic) {
		return nil
	}
	if len(in) >= 4 && binary.LittleEndian.Uint32(in)&^0xF == trailerMagic&^0xF {
		return newFormatError(ErrNotCheckpoint, "zstd stream starting with a skippable frame")
	}
	if _, err := parseLayout(in); err == nil {
		return newFormatError(ErrNotCheckpoint, "uncompressed safetensors file (checkpoints are zstd-compressed)")
	}
	return newFormatError(ErrNotCheckpoint, "not a zstd stream")
}

// decodeStream decodes and verifies the decompressed safetensors stream.
func decodeStream(stream []byte) (*File, error) {
	l, err := parseLayout(stream)
	if err != nil {
		return nil, newFormatError(classify(stream), "safetensors: "+err.Error())
	}
	want, err := checkReserved(l)
	if err != nil {
		return nil, err
	}
	format, hasFormat := l.metadata[formatKey]
	h := sha256.New()
	h.Write(stream[:l.checksumAt])
	h.Write([]byte(strings.Repeat("0", sha256.Size*2)))
	h.Write(stream[l.checksumAt+sha256.Size*2:])
	if !bytes.Equal(h.Sum(nil), want) {
		return nil, newFormatError(ErrChecksum, "SHA-256 of the content does not match "+checksumKey)
	}
	switch {
	case !hasFormat:
		return nil, newFormatError(ErrNotCheckpoint, "metadata lacks the "+formatKey+" marker")
	case format == Format:
	case format == FormatSigned:
		if err := checkSignedHeader(l); err != nil {
			return nil, err
		}
	case strings.HasPrefix(format, formatFamily):
		return nil, newFormatError(ErrUnsupportedVersion, fmt.Sprintf("format %q, this reader knows %q and %q", format, Format, FormatSigned))
	default:
		return nil, newFormatError(ErrNotCheckpoint, fmt.Sprintf("%s is %q, not %q", formatKey, format, Format))
	}

	f := &File{Tensors: make(map[string]Tensor, len(l.entries)), Metadata: make(map[string]string, len(l.metadata))}
	for k, v := range l.metadata {
		if k != formatKey && k != checksumKey && k != keyHeaderMAC {
			f.Metadata[k] = v
		}
	}
	for _, e := range l.entries {
		f.Tensors[e.name] = Tensor{DType: e.dtype, Shape: e.shape, Data: l.data[e.begin:e.end:e.end]}
	}
	return f, nil
}

// checkReserved checks what the reserved metadata of a parsed header can tell before
// the data is read, and returns the content's SHA-256 as the header states it.
func checkReserved(l *layout) ([]byte, error) {
	_, hasFormat := l.metadata[formatKey]
	sum, hasSum := l.metadata[checksumKey]
	switch {
	case !hasFormat && !hasSum:
		return nil, newFormatError(ErrNotCheckpoint, "safetensors content without the "+formatKey+" marker")
	case !hasSum:
		return nil, newFormatError(ErrCorrupt, "metadata lacks "+checksumKey)
	}
	want, err := hex.DecodeString(sum)
	if err != nil || len(want) != sha256.Size || sum != strings.ToLower(sum) || l.checksumAt < 0 {
		return nil, newFormatError(ErrCorrupt, checksumKey+" is not 64 lowercase hex digits written plainly")
	}
	return want, nil
}

// classify tells a damaged checkpoint from foreign content when the safetensors
// layout cannot be parsed: ours carry the format marker near the start.
func classify(stream []byte) error {
	head := stream[:min(len(stream), 8+maxHeaderSize)]
	if bytes.Contains(head, []byte(`"`+formatKey+`"`)) {
		return ErrCorrupt
	}
	return ErrNotCheckpoint
}
