// Package safeio holds what every reader of user files needs against hostile input: an
// open that refuses what is not a regular file (a FIFO blocks forever, a device can be
// endless, a folder is not data), a reader that refuses more bytes than a file may
// honestly hold (so a decompression bomb costs an error, not gigabytes), and a reader that
// refuses a line longer than a text format may honestly have.
package safeio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Errors of the package, for errors.Is; the errors returned say which file, line or
// limit.
var (
	ErrNotRegular  = errors.New("not a regular file")
	ErrTooLarge    = errors.New("more data than the format allows")
	ErrLineTooLong = errors.New("line too long")
)

// MaxLine bounds a line of the text data formats (CSV, LIBSVM): far above any real data
// set's lines (a dense row of a million features is about 10 MB), and small enough that
// the readers' copies of one line stay within a few hundred megabytes.
const MaxLine = 64 << 20

// Open opens path for reading, refusing anything but a regular file (symbolic links are
// followed) with an error wrapping ErrNotRegular that names path and what it is.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := CheckRegular(st, path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// The file may have been replaced between the two looks.
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, CheckRegular(st, path)
	}
	return f, nil
}

// CheckRegular returns nil when st describes a regular file, else an error wrapping
// ErrNotRegular that names path and says what it is.
func CheckRegular(st fs.FileInfo, path string) error {
	if st.Mode().IsRegular() {
		return nil
	}
	kind := "a special file"
	switch m := st.Mode(); {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	case m&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	}
	return fmt.Errorf("%s is %s, %w; give a plain file", path, kind, ErrNotRegular)
}

// LimitReader returns a reader of r that fails, once more than n bytes have come from r,
// with an error wrapping ErrTooLarge that says what (e.g. "decompressed data") exceeded n.
// Unlike io.LimitReader it does not pass a bomb off as a short file.
func LimitReader(r io.Reader, n int64, what string) io.Reader {
	return &limitReader{r: r, left: n, n: n, what: what}
}

type limitReader struct {
	r       io.Reader
	left, n int64
	what    string
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, l.err()
	}
	// Read one byte past the limit, to tell a stream that ends at it from one that goes on.
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	k, err := l.r.Read(p)
	l.left -= int64(k)
	if l.left < 0 {
		return k + int(l.left), l.err()
	}
	return k, err
}

func (l *limitReader) err() error {
	return fmt.Errorf("%s: more than %d bytes: %w", l.what, l.n, ErrTooLarge)
}

// LineLimit returns a reader of r that fails with a *LineError once a line (bytes up to
// '\n') is longer than max bytes, so that a line-oriented parser never buffers more.
func LineLimit(r io.Reader, max int) io.Reader {
	return &lineLimiter{r: r, max: max, line: 1}
}

// LineError is a line longer than the limit; it wraps ErrLineTooLong.
type LineError struct {
	Line int // from 1
	Max  int
}

func (e *LineError) Error() string {
	return fmt.Sprintf("line %d: %v: more than %d bytes", e.Line, ErrLineTooLong, e.Max)
}

func (e *LineError) Unwrap() error { return ErrLineTooLong }

type lineLimiter struct {
	r    io.Reader
	max  int
	line int // the line being read
	cur  int // its bytes so far
	err  error
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	k, err := l.r.Read(p)
	for at := 0; at < k; {
		nl := bytes.IndexByte(p[at:k], '\n')
		end := k
		if nl >= 0 {
			end = at + nl
		}
		if l.cur+end-at > l.max {
			l.err = &LineError{Line: l.line, Max: l.max}
			return at + l.max - l.cur, l.err
		}
		if nl < 0 {
			l.cur += end - at
			break
		}
		l.line++
		l.cur = 0
		at = end + 1
	}
	return k, err
}
