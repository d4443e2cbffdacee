// Package safeio holds what every reader of user files needs against hostile input: an
// open that refuses what is not a regular file (a FIFO blocks forever, a device can be
// endless, a folder is not data), a reader that refuses more bytes than a file may
// honestly hold (so a decompression bomb costs an error, not gigabytes), and a reader that
// refuses a line longer than a text format may honestly have.
package safeio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Errors of the package, for errors.Is; the errors returned say which file, line or
// limit.
var (
	ErrNotRegular  = errors.New("not a regular file")
	ErrTooLarge    = errors.New("more data than the format allows")
	ErrLineTooLong = errors.New("line too long")
)

// MaxLine bounds a line of the text data formats (CSV, LIBSVM): above any real data
// set's lines (a dense row of 800,000 features of ten characters), and small enough that
// the readers' work on one line stays within a few hundred megabytes (encoding/csv keeps
// about 40 bytes per field, with growth copies: a line of ",0" costs about 90 bytes a byte).
const MaxLine = 8 << 20

// Open opens path for reading, refusing anything but a regular file (symbolic links are
// followed: a link names what its user chose to read) with an error wrapping
// ErrNotRegular that names path and what it is.
func Open(path string) (*os.File, error) {
	return open(path, os.O_RDONLY, 0)
}

// OpenFile is os.OpenFile for a file that is written in place (a log appended to, a lock
// file): it follows no symbolic link at path, never blocks on what it opens (a FIFO
// without a reader, a device) and refuses anything but a regular file with an error
// wrapping ErrNotRegular, before a byte is written. (flag may hold O_TRUNC: it truncates
// only a regular file, since a FIFO or a device ignores it and a link is not followed.)
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return open(path, flag|oNoFollow, perm)
}

func open(path string, flag int, perm os.FileMode) (*os.File, error) {
	// Without O_NONBLOCK, opening a FIFO waits for its other end, forever, and signals
	// do not interrupt the wait. The type checked is that of what was opened (fstat),
	// not what a separate Stat saw, so nothing can be swapped in between. O_NONBLOCK is
	// cleared again before the file is handed out.
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		// A link refused by O_NOFOLLOW (ELOOP), a FIFO opened for writing without a
		// reader (ENXIO), …: say what is there when it is not a regular file.
		if st, lerr := os.Lstat(path); lerr == nil && !st.Mode().IsRegular() {
			return nil, CheckRegular(st, path)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = CheckRegular(st, path)
	}
	if err == nil {
		err = setBlocking(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// CheckOutput is the check before a file is written at path (a new file renamed over
// it, or one written in place): nil when nothing is at path or a regular file is;
// otherwise — a FIFO, a device, a socket, a directory, a symbolic link (not followed) —
// an error wrapping ErrNotRegular that names path and says what it is, since replacing
// or writing that would destroy or block on something that is not the user's output.
func CheckOutput(path string) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	return CheckRegular(st, path)
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

// LineLimit returns a reader of r that delivers r's bytes a whole line (up to and
// including '\n') at a time, and fails with a *LineError instead of delivering a line
// longer than max bytes (without its '\n'), so that a line-oriented parser never sees, let
// alone splits into fields, more than max bytes of one line. It holds one line: up to max
// bytes.
func LineLimit(r io.Reader, max int) io.Reader {
	return &lineLimiter{br: bufio.NewReaderSize(r, 64<<10), max: max, line: 1}
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
	br   *bufio.Reader
	max  int
	line int    // the number of the next line to read
	buf  []byte // the line being delivered
	off  int    // its bytes delivered so far
	err  error  // of the underlying reader, or a *LineError
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	if l.off == len(l.buf) {
		if l.err != nil {
			return 0, l.err
		}
		l.next()
		if len(l.buf) == 0 {
			return 0, l.err
		}
	}
	n := copy(p, l.buf[l.off:])
	l.off += n
	return n, nil
}

// next reads the next line into buf, or sets err.
func (l *lineLimiter) next() {
	l.buf, l.off = l.buf[:0], 0
	for {
		chunk, err := l.br.ReadSlice('\n')
		size := len(l.buf) + len(chunk)
		if err == nil {
			size-- // the '\n'
		}
		if size > l.max {
			l.buf, l.err = l.buf[:0], &LineError{Line: l.line, Max: l.max}
			return
		}
		if len(l.buf)+len(chunk) > cap(l.buf) { // double, not append's 1.25: half the copies
			grown := make([]byte, len(l.buf), min(max(2*cap(l.buf), len(l.buf)+len(chunk)), l.max+1))
			copy(grown, l.buf)
			l.buf = grown
		}
		l.buf = append(l.buf, chunk...)
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			l.line++
		default:
			l.err = err
		}
		return
	}
}
