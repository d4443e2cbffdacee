package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

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
}

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
	info := frameInfo{hasChecksum: h.HasCheckSum}
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
