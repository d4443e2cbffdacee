package cifar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// A tar member that claims 100,000 records (307 MB) but holds one made the reader reserve
// the whole claim before reading a byte; now it reserves one real batch at most.
func TestArchiveClaimNotTrusted(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: cifar10.dir + "/data_batch_1.bin", Typeflag: tar.TypeReg, Size: 100_000 * 3073})
	tw.Write(make([]byte, 3073))
	tw.Flush()
	zw.Close()
	size := b.Len()
	var err error
	grown := safeiotest.Allocated(func() { _, err = readArchive(&b, "claims.tar.gz", cifar10) })
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("error %v, want ErrTruncated", err)
	}
	if grown > 48<<20 {
		t.Errorf("a %d-byte archive made the reader allocate %d bytes", size, grown)
	}
}

// A member that is not CIFAR data was skipped for as long as it expanded: a 1 MB gzip
// bomb of 1 GiB kept the loader busy; the decompressed archive is bounded now.
func TestArchiveDecompressionBounded(t *testing.T) {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: cifar10.dir + "/padding", Typeflag: tar.TypeReg, Size: maxArchive})
	if _, err := io.CopyN(tw, safeiotest.Zeros, maxArchive); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	zw.Close()
	_, err := readArchive(&b, "bomb.tar.gz", cifar10)
	if !errors.Is(err, safeio.ErrTooLarge) {
		t.Errorf("error %v, want ErrTooLarge", err)
	}
}

// A FIFO given as the archive blocked the loader forever.
func TestNonRegularRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cifar-10-binary.tar.gz")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	_, _, err := Load10(path)
	if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want ErrNotRegular naming it", err)
	}
	os.Remove(path)
}
