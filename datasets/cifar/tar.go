package cifar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// errTarHeader reports a tar header block that is not one.
var errTarHeader = errors.New("tar: invalid header")

// tarReader reads the members of a tar stream: POSIX ustar and GNU headers, GNU long
// names ('L') and PAX extended headers ('x', path and size). It replaces archive/tar,
// which imports os/user for user-name lookups; with cgo available os/user links libc,
// and the commands would no longer build as static binaries.
type tarReader struct {
	r       io.Reader
	left    int64 // bytes of the current member not yet read
	pad     int64 // zero bytes after the member, up to the next 512-byte block
	block   [512]byte
	pending struct {
		name string
		size int64
		set  bool // size was given by a PAX header
	}
}

// tarHeader is what the CIFAR reader needs of a member.
type tarHeader struct {
	Name    string
	Size    int64
	Regular bool
}

var _ io.Reader = (*tarReader)(nil)

func newTarReader(r io.Reader) *tarReader { return &tarReader{r: r} }

// Next skips the rest of the current member and returns the next one's header, or
// io.EOF at the end of the archive. A stream cut short is io.ErrUnexpectedEOF.
func (t *tarReader) Next() (*tarHeader, error) {
	if err := t.skip(t.left + t.pad); err != nil {
		return nil, err
	}
	t.left, t.pad = 0, 0
	for {
		if _, err := io.ReadFull(t.r, t.block[:]); err != nil {
			if err == io.EOF {
				return nil, io.ErrUnexpectedEOF // an archive ends with zero blocks
			}
			return nil, err
		}
		b := t.block[:]
		if bytes.Count(b, []byte{0}) == len(b) {
			return nil, io.EOF
		}
		if err := checkTarChecksum(b); err != nil {
			return nil, err
		}
		size, err := tarNumber(b[124:136])
		if err != nil || size < 0 {
			return nil, fmt.Errorf("%w: size field %q", errTarHeader, b[124:136])
		}
		name := tarString(b[0:100])
		if string(b[257:263]) == "ustar\x00" { // POSIX: a prefix holds the leading directories
			if prefix := tarString(b[345:500]); prefix != "" {
				name = prefix + "/" + name
			}
		}
		flag := b[156]
		// GNU long name and link ('L', 'K'), PAX extended and global headers ('x',
		// 'g') are not members: what 'L' and 'x' say belongs to the next header that is.
		meta := flag == 'L' || flag == 'K' || flag == 'x' || flag == 'g'
		if !meta {
			if t.pending.name != "" {
				name, t.pending.name = t.pending.name, ""
			}
			if t.pending.set {
				size, t.pending.set = t.pending.size, false
			}
		}
		t.left, t.pad = size, (512-size%512)%512
		if meta {
			if size > 1<<20 {
				return nil, fmt.Errorf("%w: %d-byte extended header", errTarHeader, size)
			}
			data := make([]byte, size)
			if _, err := io.ReadFull(t.r, data); err != nil {
				return nil, unexpected(err)
			}
			t.left = 0
			if err := t.skip(t.pad); err != nil {
				return nil, err
			}
			t.pad = 0
			switch flag {
			case 'L':
				t.pending.name = strings.TrimRight(string(data), "\x00")
			case 'x':
				if err := t.pax(data); err != nil {
					return nil, err
				}
			} // 'K' (a link's target) and 'g' (archive-wide defaults): nothing the reader needs
			continue
		}
		return &tarHeader{Name: name, Size: size, Regular: flag == '0' || flag == 0 || flag == '7'}, nil
	}
}

// pax takes the path and size records of a PAX extended header ("LEN key=value\n").
func (t *tarReader) pax(data []byte) error {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		n, err := strconv.Atoi(string(data[:max(sp, 0)]))
		if sp < 0 || err != nil || n <= sp+1 || n > len(data) || data[n-1] != '\n' {
			return fmt.Errorf("%w: PAX record", errTarHeader)
		}
		key, value, ok := strings.Cut(string(data[sp+1:n-1]), "=")
		if !ok {
			return fmt.Errorf("%w: PAX record %q", errTarHeader, data[sp+1:n-1])
		}
		switch key {
		case "path":
			t.pending.name = value
		case "size":
			s, err := strconv.ParseInt(value, 10, 64)
			if err != nil || s < 0 {
				return fmt.Errorf("%w: PAX size %q", errTarHeader, value)
			}
			t.pending.size, t.pending.set = s, true
		}
		data = data[n:]
	}
	return nil
}

// Read reads from the current member.
func (t *tarReader) Read(p []byte) (int, error) {
	if t.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > t.left {
		p = p[:t.left]
	}
	n, err := t.r.Read(p)
	t.left -= int64(n)
	if err == io.EOF && t.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (t *tarReader) skip(n int64) error {
	if n == 0 {
		return nil
	}
	m, err := io.CopyN(io.Discard, t.r, n)
	if m < n {
		return unexpected(err)
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF || err == nil {
		return io.ErrUnexpectedEOF
	}
	return err
}

// checkTarChecksum checks the header's checksum: the sum of its bytes with the checksum
// field read as spaces, unsigned (POSIX) or signed (some old tars).
func checkTarChecksum(b []byte) error {
	want, err := tarNumber(b[148:156])
	if err != nil {
		return fmt.Errorf("%w: checksum field %q", errTarHeader, b[148:156])
	}
	var unsigned, signed int64
	for i, c := range b {
		if i >= 148 && i < 156 {
			c = ' '
		}
		unsigned += int64(c)
		signed += int64(int8(c))
	}
	if want != unsigned && want != signed {
		return fmt.Errorf("%w: checksum %d, header sums to %d", errTarHeader, want, unsigned)
	}
	return nil
}

// tarNumber reads a numeric field: octal ASCII padded with spaces or NULs, or GNU's
// base-256 (first byte 0x80, big-endian).
func tarNumber(f []byte) (int64, error) {
	if len(f) > 0 && f[0] == 0x80 {
		var v int64
		for _, c := range f[1:] {
			if v > (1<<62)>>8 {
				return 0, errTarHeader
			}
			v = v<<8 | int64(c)
		}
		return v, nil
	}
	s := strings.Trim(string(f), " \x00")
	if s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 8, 64)
}

func tarString(f []byte) string {
	if i := bytes.IndexByte(f, 0); i >= 0 {
		f = f[:i]
	}
	return string(f)
}
