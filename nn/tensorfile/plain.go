package tensorfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"unicode/utf8"
)

// EncodeSafetensors writes tensors and metadata to w as a plain safetensors byte stream
// (https://github.com/huggingface/safetensors), the format that safetensors.torch.load_file
// reads: no compression, no checksum, no format marker. The layout is the one described in
// the package documentation: the 8-byte little-endian header length, the compact JSON
// header ("__metadata__" first with its keys sorted, when metadata is not nil; then the
// tensors) padded with spaces to a multiple of 8 bytes, and the data section with the
// tensors by descending dtype, then name, contiguous from offset 0. It is deterministic
// and writes nothing if the tensors or metadata are invalid (the rules of Encode; no key
// is reserved).
func EncodeSafetensors(w io.Writer, tensors map[string]Tensor, metadata map[string]string) error {
	entries, err := planEntries(tensors)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("checkpoint: metadata %q: key and value must be valid UTF-8", k)
		}
	}
	header, _, err := encodeHeader(metadata, entries)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))
	if _, err := w.Write(prefix[:]); err != nil {
		return fmt.Errorf("checkpoint: write: %w", err)
	}
	if _, err := w.Write(header); err != nil {
		return fmt.Errorf("checkpoint: write: %w", err)
	}
	for _, e := range entries {
		if _, err := w.Write(tensors[e.name].Data); err != nil {
			return fmt.Errorf("checkpoint: write: %w", err)
		}
	}
	return nil
}

// DecodeSafetensors parses a plain safetensors byte stream with the checks Decode applies
// to the stream inside a checkpoint (header length, JSON, no duplicate keys, offsets that
// tile the data section exactly) but requires no format marker or checksum. The tensors
// share stream's memory. Errors match ErrCorrupt.
func DecodeSafetensors(stream []byte) (*File, error) {
	l, err := parseLayout(stream)
	if err != nil {
		return nil, newFormatError(ErrCorrupt, "safetensors: "+err.Error())
	}
	f := &File{Tensors: make(map[string]Tensor, len(l.entries)), Metadata: l.metadata}
	for _, e := range l.entries {
		f.Tensors[e.name] = Tensor{DType: e.dtype, Shape: e.shape, Data: l.data[e.begin:e.end:e.end]}
	}
	if f.Metadata == nil {
		f.Metadata = map[string]string{}
	}
	return f, nil
}
