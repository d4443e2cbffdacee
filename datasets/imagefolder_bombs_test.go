package datasets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// The image folder read every file whole before looking at its header: a PNG header
// claiming 60000×60000 followed by 256 MiB (a sparse file) cost 256 MiB. The header is
// read alone now, and the claim refused.
func TestImageFolderReadsHeaderFirst(t *testing.T) {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	// IHDR's width and height, then its CRC (PNG specification, section 5.3).
	binary.BigEndian.PutUint32(p[16:], 60000)
	binary.BigEndian.PutUint32(p[20:], 60000)
	binary.BigEndian.PutUint32(p[29:], crc32.ChecksumIEEE(p[12:29]))
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "a"), 0o700)
	path := filepath.Join(dir, "a", "x.png")
	if err := os.WriteFile(path, p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 256<<20); err != nil {
		t.Fatal(err)
	}
	var err error
	grown := safeiotest.Allocated(func() { _, err = LoadImageFolder(dir, ImageFolderOptions{}) })
	if !errors.Is(err, ErrImage) || !strings.Contains(err.Error(), "60000×60000") {
		t.Errorf("error %v, want ErrImage naming the claimed size", err)
	}
	if grown > 4<<20 {
		t.Errorf("refusing the image allocated %d bytes", grown)
	}
}
