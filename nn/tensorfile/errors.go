package tensorfile

import (
	"errors"

	"github.com/privtrain/privtrain/internal/safeio"
)

// Errors returned by Decode and ReadFile, to be tested with errors.Is. The returned
// errors carry a detail message (and the path, for ReadFile) in front of these.
var (
	// ErrNotCheckpoint: the input is not a privtrain checkpoint: not a zstd stream, a
	// plain safetensors file, or a zstd stream whose content lacks the format marker.
	ErrNotCheckpoint = errors.New("not a privtrain checkpoint")

	// ErrUnsupportedVersion: the input is a privtrain checkpoint of a format version
	// this package cannot read.
	ErrUnsupportedVersion = errors.New("unsupported privtrain checkpoint version")

	// ErrCorrupt: the input is a damaged privtrain checkpoint. ErrTruncated and
	// ErrChecksum are kinds of ErrCorrupt: errors.Is(err, ErrCorrupt) holds for them too.
	ErrCorrupt = errors.New("corrupt checkpoint")

	// ErrTruncated: the input ends before the checkpoint does.
	ErrTruncated error = &subKind{"truncated checkpoint", ErrCorrupt}

	// ErrChecksum: the zstd content checksum or the SHA-256 of the content does not match.
	ErrChecksum error = &subKind{"checkpoint checksum mismatch", ErrCorrupt}

	// ErrTooLarge: the checkpoint exceeds the decoder's size limit (see WithMaxSize) or
	// its header exceeds the safetensors limit of 100,000,000 bytes.
	ErrTooLarge = errors.New("checkpoint too large")

	// ErrNotRegular: the path given to ReadFile (or checkpoint.Load) is not a regular
	// file but a FIFO, a device, a directory or a socket, or the path given to WriteFile
	// (or checkpoint.Save) is any of those or a symbolic link, which a write would replace.
	ErrNotRegular = safeio.ErrNotRegular
)

// subKind is a sentinel that is also a kind of a broader sentinel.
type subKind struct {
	msg    string
	parent error
}

func (k *subKind) Error() string { return k.msg }
func (k *subKind) Unwrap() error { return k.parent }

// formatError is a decoding failure of one of the kinds above, with its detail.
type formatError struct {
	kind   error
	detail string
}

func (e *formatError) Error() string { return e.kind.Error() + ": " + e.detail }
func (e *formatError) Unwrap() error { return e.kind }

func newFormatError(kind error, detail string) error {
	return &formatError{kind: kind, detail: detail}
}
