package safeio

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for path, kind := range map[string]string{fifo: "named pipe", dir: "directory", "/dev/zero": "character device"} {
		f, err := Open(path) // a FIFO would block here forever if it were opened
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), kind) {
			t.Errorf("Open(%s) = %v, want ErrNotRegular naming it and %q", path, err, kind)
		}
		if f != nil {
			f.Close()
		}
	}
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o600)
	f, err := Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestLimitReader(t *testing.T) {
	for _, tc := range []struct {
		size, limit int64
		ok          bool
	}{{0, 0, true}, {10, 10, true}, {11, 10, false}, {1 << 20, 1<<20 - 1, false}, {5, 100, true}} {
		n, err := io.Copy(io.Discard, LimitReader(io.LimitReader(zeros{}, tc.size), tc.limit, "data"))
		if tc.ok && (err != nil || n != tc.size) {
			t.Errorf("%d bytes, limit %d: %d, %v; want all", tc.size, tc.limit, n, err)
		}
		if !tc.ok && (!errors.Is(err, ErrTooLarge) || n != tc.limit) {
			t.Errorf("%d bytes, limit %d: %d, %v; want ErrTooLarge after %d bytes", tc.size, tc.limit, n, err, tc.limit)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestLineLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		line int // 0: no error
		n    int // bytes delivered before the error
	}{
		{"ab\ncd\n", 2, 0, 6},
		{"ab\ncde\n", 2, 2, 3}, // the long line is not delivered at all
		{"abc", 2, 1, 0},
		{"\n\n\nabcdef", 5, 4, 3},
		{"a\nbb\nccc", 3, 0, 8},
		{"a\nbb\nccc\n", 3, 0, 9},
		{"", 3, 0, 0},
		{strings.Repeat("x", 100<<10) + "\ny", 100 << 10, 0, 100<<10 + 2}, // longer than the buffer
		{strings.Repeat("x", 100<<10) + "\ny", 100<<10 - 1, 1, 0},
	} {
		// One byte at a time and all at once, so lines span reads and reads span lines.
		for _, r := range []io.Reader{strings.NewReader(tc.in), &oneByte{strings.NewReader(tc.in)}} {
			got, err := io.ReadAll(LineLimit(r, tc.max))
			var le *LineError
			switch {
			case tc.line == 0 && err != nil:
				t.Errorf("%q max %d: %v", tc.in, tc.max, err)
			case tc.line != 0 && (!errors.As(err, &le) || le.Line != tc.line || !errors.Is(err, ErrLineTooLong)):
				t.Errorf("%q max %d: %v, want line %d too long", tc.in, tc.max, err, tc.line)
			case len(got) != tc.n || !bytes.Equal(got, []byte(tc.in[:tc.n])):
				t.Errorf("%q max %d: delivered %q, want %q", tc.in, tc.max, got, tc.in[:tc.n])
			}
		}
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

// FuzzLineLimit checks LineLimit against a plain split of the input: it delivers exactly
// the lines up to the first longer than max, and then names that line.
func FuzzLineLimit(f *testing.F) {
	f.Add([]byte("ab\ncde\n"), uint8(2))
	f.Add([]byte("\n\nabc"), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, m uint8) {
		max := int(m)
		wantLine, wantN := 0, len(in)
		for i, at := 1, 0; at < len(in); i++ {
			end := bytes.IndexByte(in[at:], '\n')
			if end < 0 {
				end = len(in) - at
			}
			if end > max {
				wantLine, wantN = i, at
				break
			}
			at += end + 1
		}
		got, err := io.ReadAll(LineLimit(&oneByte{bytes.NewReader(in)}, max))
		var le *LineError
		if wantLine == 0 && err != nil || wantLine != 0 && (!errors.As(err, &le) || le.Line != wantLine) {
			t.Fatalf("max %d: error %v, want line %d", max, err, wantLine)
		}
		if !bytes.Equal(got, in[:wantN]) {
			t.Fatalf("max %d: delivered %q, want %q", max, got, in[:wantN])
		}
	})
}
