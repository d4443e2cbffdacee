package predictcmd

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
	"syscall"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// claimingPNG returns a PNG of one gray pixel whose header claims w×h pixels (the IHDR
// chunk rewritten, its CRC recomputed per the PNG specification, section 5.3).
func claimingPNG(t *testing.T, w, h uint32) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	// 8-byte signature, then IHDR: length (4), "IHDR" (4), width (4), height (4), 5 more bytes, CRC.
	binary.BigEndian.PutUint32(p[16:], w)
	binary.BigEndian.PutUint32(p[20:], h)
	binary.BigEndian.PutUint32(p[29:], crc32.ChecksumIEEE(p[12:29]))
	return p
}

// predict decoded a whole image before checking its size: a 69-byte PNG claiming
// 60000×60000 asked for gigabytes, a 777 KB 10000² 16-bit PNG took 777 MB. The size in
// the header is checked first now, as training's image folders check it.
func TestImageSizeCheckedBeforeDecoding(t *testing.T) {
	dir := t.TempDir()
	big := image.NewGray16(image.Rect(0, 0, 3000, 3000)) // 18 MB decoded, a few KB encoded
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, big); err != nil {
		t.Fatal(err)
	}
	big = nil
	files := map[string][]byte{"claims.png": claimingPNG(t, 60000, 60000), "big16.png": b.Bytes()}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := &reader{shape: []int{1, 28, 28}, scale: 1}
		var err error
		grown := safeiotest.Allocated(func() { _, err = r.readImage(path) })
		var ue *exit.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s (%d bytes): %v, want a usage error naming it", name, len(data), err)
		}
		if grown > 4<<20 {
			t.Errorf("%s (%d bytes): refusing it allocated %d bytes", name, len(data), grown)
		}
	}
}

// A FIFO named like an image blocked predict forever.
func TestImageNonRegularRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.png")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	r := &reader{shape: []int{1, 28, 28}, scale: 1}
	_, err := r.read(path)
	var ue *exit.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("%v, want a usage error saying it is a named pipe", err)
	}
}
