package tensorfile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// zstdMagic opens every zstd frame (RFC 8878, section 3.1.1).
const zstdMagic = "\x28\xb5\x2f\xfd"

// maxBlockSize is the largest a zstd block decompresses to (RFC 8878, 3.1.1.2.3).
const maxBlockSize = 128 << 10

// frameInfo describes the zstd frame a checkpoint is stored in.
type frameInfo struct {
	length      int    // bytes of the frame, checksum included
	hasChecksum bool   // Content_Checksum_flag
	maxContent  uint64 // an upper bound on the decompressed size, read off the block headers
	hasSize     bool   // the frame header declares the content size (Encode's do from 256 bytes on)
	size        uint64 // the declared content size, if hasSize
	window      uint64 // the window the decoder must keep (the content size for a single segment)
}

// maxWindow is the largest zstd window a checkpoint may ask the decoder to keep:
// 128 MiB, the default limit of the reference `zstd -d` (--memory=128MB). Encode's
// frames use 4 MiB at most; the decoder allocates the window at once, so a frame may
// not claim more than this.
const maxWindow = 128 << 20

// walkFrame finds the extent of the zstd frame at the start of in by reading its frame
// and block headers (RFC 8878, 3.1.1), without decompressing anything. Knowing the
// extent lets Decode reject trailing bytes and tell a truncated file from a damaged
// one, and the bound on the content lets it refuse a declared content size that the
// blocks cannot hold before the decoder allocates it.
func walkFrame(in []byte) (frameInfo, error) {
	var h zstd.Header
	if _, err := h.DecodeAndStrip(in); err != nil {
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return frameInfo{}, newFormatError(ErrTruncated, "input ends inside the zstd frame header")
		case errors.Is(err, zstd.ErrMagicMismatch):
			return frameInfo{}, newFormatError(ErrNotCheckpoint, "not a zstd stream")
		}
		return frameInfo{}, newFormatError(ErrCorrupt, "zstd frame header: "+err.Error())
	}
	if h.DictionaryID != 0 {
		return frameInfo{}, newFormatError(ErrNotCheckpoint, "zstd frame needs a dictionary")
	}
	// An encoder must leave the unused bit of the frame header descriptor zero; the
	// decoder would ignore it, so check it here lest a flipped bit pass unnoticed.
	if in[4]&(1<<4) != 0 {
		return frameInfo{}, newFormatError(ErrCorrupt, "unused bit set in the zstd frame header")
	}
	info := frameInfo{hasChecksum: h.HasCheckSum, hasSize: h.HasFCS, size: h.FrameContentSize, window: h.WindowSize}
	if h.SingleSegment {
		info.window = h.FrameContentSize
	}
	pos := h.HeaderSize
	for {
		if len(in)-pos < 3 {
			return info, newFormatError(ErrTruncated, fmt.Sprintf("input ends inside the zstd block header at byte %d", pos))
		}
		bh := uint32(in[pos]) | uint32(in[pos+1])<<8 | uint32(in[pos+2])<<16
		pos += 3
		last, kind, size := bh&1 != 0, (bh>>1)&3, int(bh>>3)
		if size > maxBlockSize {
			return info, newFormatError(ErrCorrupt, fmt.Sprintf("zstd block of %d bytes exceeds 128 KiB", size))
		}
		stored := size
		switch kind {
		case 0: // Raw_Block
			info.maxContent += uint64(size)
		case 1: // RLE_Block: one byte repeated size times
			stored = 1
			info.maxContent += uint64(size)
		case 2: // Compressed_Block
			info.maxContent += maxBlockSize
		default:
			return info, newFormatError(ErrCorrupt, "zstd block of reserved type")
		}
		if len(in)-pos < stored {
			return info, newFormatError(ErrTruncated, fmt.Sprintf("input ends inside a zstd block at byte %d", len(in)))
		}
		pos += stored
		if last {
			break
		}
	}
	if info.hasChecksum {
		if len(in)-pos < 4 {
			return info, newFormatError(ErrTruncated, "input ends inside the zstd content checksum")
		}
		pos += 4
	}
	if h.HasFCS && h.FrameContentSize > info.maxContent {
		return info, newFormatError(ErrCorrupt, fmt.Sprintf(
			"zstd frame declares %d bytes of content, its blocks hold at most %d", h.FrameContentSize, info.maxContent))
	}
	info.length = pos
	return info, nil
}

// The trailer is a zstd skippable frame (RFC 8878, 3.1.2) after the data frame:
// magic, a 4-byte payload size, then the payload: trailerTag and the SHA-256 of every
// byte of the data frame. Decompressors skip it; it makes every byte of the file
// checked, including the bits of the compressed representation that zstd itself leaves
// unchecked because they do not change the decompressed output (window size, unused
// entries of entropy tables).
const (
	trailerMagic = 0x184D2A5E
	trailerTag   = "ptsha256"
	trailerSize  = 8 + len(trailerTag) + sha256.Size
)

// appendTrailer appends the trailer for a data frame with the given SHA-256.
func appendTrailer(dst []byte, frameSum []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, trailerMagic)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(trailerTag)+sha256.Size))
	dst = append(dst, trailerTag...)
	return append(dst, frameSum...)
}

// checkTrailer checks that rest, the bytes after the data frame, is exactly the
// trailer for frame.
func checkTrailer(frame, rest []byte) error {
	sum := sha256.Sum256(frame)
	want := appendTrailer(nil, sum[:])
	header := trailerSize - sha256.Size
	switch {
	case bytes.Equal(rest, want):
		return nil
	case len(rest) < trailerSize && bytes.HasPrefix(want, rest):
		return newFormatError(ErrTruncated, fmt.Sprintf("input ends %d bytes into the %d-byte trailer", len(rest), trailerSize))
	case len(rest) > trailerSize && bytes.HasPrefix(rest, want):
		return newFormatError(ErrCorrupt, fmt.Sprintf("%d bytes follow the trailer", len(rest)-trailerSize))
	case len(rest) >= trailerSize && bytes.Equal(rest[:header], want[:header]):
		return newFormatError(ErrChecksum, "SHA-256 of the zstd frame does not match the trailer")
	}
	return newFormatError(ErrCorrupt, "no valid trailer after the zstd frame")
}

// inflate decompresses the data frame in[:frame.length] through a limit. It reads the
// safetensors length prefix and header first and allocates the rest only for the size
// they describe, after checking that size against every bound the file offers: the
// declared content size, what the blocks can hold and c.maxSize. Content that is not
// a safetensors stream is refused after its first bytes; a zstd bomb therefore costs
// at most the header it claims (≤ 100 MB) or, with a plausible header, the size that
// header declares, allocated once, never the doubling of an unsized decode. With
// c.key it refuses a header without a MAC before reading the data, and checks the MAC
// before allocating the data (FormatSigned: the header's; Format: the whole MAC, streamed)
// and, for FormatSigned, the stream's as the data is read. Errors of
// the content come back as a nil error with the short stream, for decodeStream to
// classify as it classifies any other stream.
func inflate(in []byte, frame frameInfo, c readConfig) ([]byte, error) {
	if frame.hasSize && frame.size > uint64(c.maxSize) {
		return nil, newFormatError(ErrTooLarge, fmt.Sprintf("zstd frame declares %d bytes of content, the limit is %d", frame.size, c.maxSize))
	}
	if frame.window > maxWindow {
		return nil, newFormatError(ErrTooLarge, fmt.Sprintf("zstd frame asks for a %d-byte window, the limit is %d", frame.window, maxWindow))
	}
	limit := min(uint64(c.maxSize), frame.maxContent)
	if frame.hasSize {
		limit = min(limit, frame.size)
	}
	dec, err := newDecoder(in, frame, c)
	if err != nil {
		return nil, err
	}
	defer dec.Close()

	// The length prefix and the header, each no longer than the limits allow.
	prefix := make([]byte, 8)
	if n, err := io.ReadFull(dec, prefix); err != nil {
		return prefix[:n], zstdError(err, c)
	}
	n := binary.LittleEndian.Uint64(prefix)
	if n > maxHeaderSize || limit < 8 || n > limit-8 {
		return prefix, nil // decodeStream reports the length (parseLayout's message)
	}
	stream := make([]byte, 8+n)
	copy(stream, prefix)
	if got, err := io.ReadFull(dec, stream[8:]); err != nil {
		return stream[:8+got], zstdError(err, c)
	}
	l, err := parseHeader(stream)
	if err != nil {
		return stream, nil
	}
	dataSize, err := dataExtent(l)
	if err != nil {
		return stream, nil
	}
	// A header that is not a checkpoint's is refused before its data is read.
	if _, err := checkReserved(l); err != nil {
		return nil, err
	}
	// The size the header claims, checked before it is allocated.
	total := 8 + n + dataSize
	switch {
	case dataSize > uint64(c.maxSize) || total > uint64(c.maxSize):
		return nil, newFormatError(ErrTooLarge, fmt.Sprintf("safetensors header describes %d bytes of content, the limit is %d", total, c.maxSize))
	case frame.hasSize && total != frame.size:
		return nil, newFormatError(classify(stream), fmt.Sprintf(
			"safetensors header describes %d bytes of content, the zstd frame declares %d", total, frame.size))
	case total > frame.maxContent:
		return nil, newFormatError(classify(stream), fmt.Sprintf(
			"safetensors header describes %d bytes of content, the zstd blocks hold at most %d", total, frame.maxContent))
	}
	// With a key, the MAC is checked as far as it can be before the data is allocated.
	var mac hash.Hash // FormatSigned: the stream's MAC, fed the data as it comes
	if c.key != nil {
		if _, ok := l.metadata[MACKey]; !ok {
			return nil, fmt.Errorf("%w: %w", ErrAuthentication, ErrNoMAC)
		}
		switch format := l.metadata[formatKey]; format {
		case FormatSigned:
			if err := checkSignedHeader(l); err != nil {
				return nil, err
			}
			head := signedHead(stream, len(stream), l)
			want, err := hexMAC(l.metadata[keyHeaderMAC])
			if err != nil {
				return nil, err
			}
			if !hmac.Equal(headerMAC(c.key, head), want) {
				return nil, errMACMismatch
			}
			mac = dataMAC(c.key, head)
		case Format:
			if err := verifyLegacyMAC(in, frame, c, l, 8+n, dataSize); err != nil {
				return nil, err
			}
		default:
			return stream, nil // decodeStream says what the format is
		}
	}

	stream = append(stream, make([]byte, dataSize)...)
	var src io.Reader = dec
	if mac != nil {
		src = io.TeeReader(dec, mac)
	}
	if got, err := io.ReadFull(src, stream[8+n:]); err != nil {
		if err := zstdError(err, c); err != nil {
			return nil, err
		}
		return nil, newFormatError(classify(stream), fmt.Sprintf(
			"safetensors: the content ends after %d bytes, its header describes %d", 8+n+uint64(got), total))
	}
	// The frame must end here; reading on also checks its content checksum.
	var extra [1]byte
	switch got, err := dec.Read(extra[:]); {
	case got > 0:
		return nil, newFormatError(classify(stream), fmt.Sprintf("safetensors: the content goes on after the %d bytes its header describes", total))
	case err != io.EOF:
		if err := zstdError(err, c); err != nil {
			return nil, err
		}
	}
	if mac != nil {
		if want, err := hexMAC(l.metadata[MACKey]); err != nil || !hmac.Equal(mac.Sum(nil), want) {
			return nil, errMACMismatch
		}
	}
	return stream, nil
}

// newDecoder starts a decoder of the data frame in[:frame.length], within the limits
// of c: one goroutine, the window and the output bounded.
func newDecoder(in []byte, frame frameInfo, c readConfig) (*zstd.Decoder, error) {
	return zstd.NewReader(bytes.NewReader(in[:frame.length]),
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(c.maxSize)),
		zstd.WithDecoderMaxWindow(max(min(uint64(c.maxSize), maxWindow), zstd.MinWindowSize)))
}

// zstdError turns an error of the zstd decoder into the package's kinds; the end of
// the stream, which the caller handles, gives nil.
func zstdError(err error, c readConfig) error {
	switch {
	case err == nil, err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
		return nil
	case errors.Is(err, zstd.ErrCRCMismatch):
		return newFormatError(ErrChecksum, "zstd content checksum mismatch")
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return newFormatError(ErrTooLarge, fmt.Sprintf("decompressed content exceeds %d bytes", c.maxSize))
	}
	return newFormatError(ErrCorrupt, "zstd: "+strings.TrimPrefix(err.Error(), "zstd: "))
}
