// Package download is the core shared by datasets/mnist/download and erm/data/download:
// fetching a file whose size and SHA-256 digest are pinned, over HTTP, into place
// atomically, and checking a file already on disk against the same pin. The bytes are
// hashed while they are copied, at most one byte more than the pinned size is read, and
// a file is renamed into place only once verified (internal/atomicfile), so the target
// never holds a partial or unverified file under its name.
//
// It imports no product package; the two public packages keep their own APIs (their
// RemoteFile is an alias of this one, their ErrChecksum this one's value).
package download

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/privtrain/privtrain/internal/atomicfile"
	"github.com/privtrain/privtrain/internal/safeio"
)

// ErrChecksum reports a file whose size or SHA-256 digest is not the expected one.
var ErrChecksum = errors.New("checksum mismatch")

// RemoteFile is a file to fetch: its name, which is appended to a base URL and used in
// the target directory, and what it must be.
type RemoteFile struct {
	Name   string
	Size   int64  // bytes; 0 when unknown
	SHA256 string // lower-case hex digest
}

// CopyChecked copies r to w (w may be io.Discard), reading at most one byte more than
// f.Size (2³² bytes when the size is unknown), and checks size and digest: a wrong
// size, a too-long body or a wrong digest is an error wrapping ErrChecksum.
func CopyChecked(w io.Writer, r io.Reader, f RemoteFile) error {
	limit := f.Size + 1 // one byte more than expected reveals a too-long body
	if f.Size <= 0 {
		limit = 1 << 32
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, limit))
	if err != nil {
		return err
	}
	if f.Size > 0 && n != f.Size {
		return fmt.Errorf("%w: %d bytes, want %d", ErrChecksum, n, f.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(f.SHA256) {
		return fmt.Errorf("%w: SHA-256 %s, want %s", ErrChecksum, got, f.SHA256)
	}
	return nil
}

// Get copies url's body into w with client (http.DefaultClient when nil), checking
// size and digest on the way (CopyChecked). A status other than 200 is an error.
func Get(ctx context.Context, client *http.Client, url string, f RemoteFile, w io.Writer) error {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	return CopyChecked(w, resp.Body, f)
}

// Fetch downloads url into path (mode 0644) atomically: the body is written under a
// temporary name and renamed to path only once its size and digest are verified. If
// progress is not nil, every chunk received is also written to it.
func Fetch(ctx context.Context, client *http.Client, url, path string, f RemoteFile, progress io.Writer) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if progress != nil {
			w = io.MultiWriter(w, progress)
		}
		return Get(ctx, client, url, f, w)
	})
}

// VerifyFile checks that the file at path is f. With gunzip, the file is decompressed
// first, so a gzipped copy verifies against the digest of the uncompressed file. A
// mismatch wraps ErrChecksum; errors other than opening the file name path. A FIFO or a
// device at path is refused (safeio.ErrNotRegular), not read.
func VerifyFile(path string, f RemoteFile, gunzip bool) error {
	file, err := safeio.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	var r io.Reader = file
	if gunzip {
		zr, err := gzip.NewReader(file)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	if err := CopyChecked(io.Discard, r, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
