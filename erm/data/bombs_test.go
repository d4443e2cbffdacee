package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// lineBomb writes a gzip file at path holding one line: prefix, then filler repeated
// until the line is size bytes, with no newline (about 1 KB per MB).
func lineBomb(t *testing.T, path, prefix, filler string, size int) {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write([]byte(prefix))
	chunk := []byte(strings.Repeat(filler, 1<<16/len(filler)))
	for n := len(prefix); n < size; n += len(chunk) {
		zw.Write(chunk)
	}
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// One endless line in a .csv.gz or LIBSVM .gz was buffered whole by encoding/csv or
// bufio.Scanner (up to 1 GiB), then parsed into as many values: a 4.7 MB file made cmd/erm
// use more than 22 GB. Now the line is refused once it passes safeio.MaxLine, without
// being parsed, and what the reader allocated is bounded by a few copies of that limit.
func TestOneHugeLineRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, prefix, filler, reader string }{
		{"line.csv.gz", "1", ",0", "csv: line 1"},
		{"line.libsvm.gz", "1", " 1:0", "libsvm: line 1"},
	} {
		path := filepath.Join(dir, tc.name)
		lineBomb(t, path, tc.prefix, tc.filler, 3*safeio.MaxLine)
		var err error
		grown := safeiotest.Allocated(func() { _, err = ReadFile(path, FormatAuto) })
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.reader) || !strings.Contains(err.Error(), "line too long") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want ErrFormat naming the file and line 1 as too long", tc.name, err)
		}
		if limit := uint64(3*safeio.MaxLine + 16<<20); grown > limit {
			t.Errorf("%s: refusing a %d-byte line allocated %d bytes, want at most %d", tc.name, 3*safeio.MaxLine, grown, limit)
		}
	}
}

// A gzip file of nothing but newlines parses to nothing at no memory cost, but it was read
// for as long as it expanded; the decompressed text is bounded now.
func TestDecompressionBounded(t *testing.T) {
	defer func(n int64) { maxDecompressed = n }(maxDecompressed)
	maxDecompressed = 16 << 20
	path := filepath.Join(t.TempDir(), "blank.csv.gz")
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	io.CopyN(zw, newlines{}, maxDecompressed+1)
	zw.Close()
	os.WriteFile(path, b.Bytes(), 0o600)
	_, err := ReadFile(path, FormatAuto)
	if !errors.Is(err, safeio.ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want ErrTooLarge naming the file", err)
	}
}

type newlines struct{}

func (newlines) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '\n'
	}
	return len(p), nil
}

// A FIFO given as the data file blocked ReadFile forever.
func TestReadFileRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "data.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, p := range []string{fifo, dir} {
		if _, err := ReadFile(p, FormatAuto); !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadFile(%s): %v, want ErrNotRegular naming it", p, err)
		}
	}
}
