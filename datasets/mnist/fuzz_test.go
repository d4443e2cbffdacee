package mnist

import (
	"bytes"
	"errors"
	"testing"
)

// Every input either decodes into data consistent with its header or fails with one of
// the package's errors; nothing panics.
func FuzzDecodeImages(f *testing.F) {
	f.Add(idx3(0x803, 2, 2, 3, pattern(2, 2, 3)))
	f.Add(idx3(0x803, 1, 28, 28, pattern(1, 28, 28)))
	f.Add(idx3(0x803, 2, 2, 3, pattern(2, 2, 3))[:20])
	f.Add(idx3(0x803, 0xffffffff, 0xffffffff, 0xffffffff, nil))
	f.Add(idx1(0x801, []byte{1, 2}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, rows, cols, px, err := decodeImages(bytes.NewReader(data), 0)
		if err != nil {
			if !errors.Is(err, ErrMagic) && !errors.Is(err, ErrDimensions) &&
				!errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTrailingData) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(px) != n*rows*cols || len(data) != 16+len(px) || !bytes.Equal(px, data[16:]) {
			t.Fatalf("%d×%d×%d decoded into %d bytes from %d", n, rows, cols, len(px), len(data))
		}
	})
}

func FuzzDecodeLabels(f *testing.F) {
	f.Add(idx1(0x801, []byte{0, 9, 3}))
	f.Add(idx1(0x801, []byte{10}))
	f.Add(idx1(0x801, []byte{1, 2})[:9])
	f.Add(idx3(0x803, 1, 1, 1, []byte{1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		labels, err := decodeLabels(bytes.NewReader(data), len(data)-8)
		if err != nil {
			if !errors.Is(err, ErrMagic) && !errors.Is(err, ErrDimensions) && !errors.Is(err, ErrTruncated) &&
				!errors.Is(err, ErrTrailingData) && !errors.Is(err, ErrLabelRange) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if !bytes.Equal(labels, data[8:]) {
			t.Fatal("labels differ from the data")
		}
		for _, l := range labels {
			if l > 9 {
				t.Fatalf("label %d accepted", l)
			}
		}
	})
}

// The whole path from a (possibly gzipped) file to a dataset.
func FuzzLoadFiles(f *testing.F) {
	f.Add(idx3(0x803, 2, 2, 2, pattern(2, 2, 2)), idx1(0x801, []byte{1, 2}), false)
	f.Add(idx3(0x803, 2, 2, 2, pattern(2, 2, 2)), idx1(0x801, []byte{1, 2}), true)
	f.Add(idx3(0x803, 1, 2, 2, pattern(1, 2, 2)), idx1(0x801, []byte{1, 2}), true)
	f.Fuzz(func(t *testing.T, images, labels []byte, gzipped bool) {
		if gzipped {
			images = gz(t, images)
		}
		dir := t.TempDir()
		writeFiles(t, dir, map[string][]byte{"i": images, "l": labels})
		m, err := LoadFiles(dir+"/i", dir+"/l")
		if err != nil {
			return
		}
		x := make([]float32, m.Shape()[1]*m.Shape()[2])
		for i := range m.Len() {
			if l := m.Example(i, x); l < 0 || l > 9 {
				t.Fatalf("label %d", l)
			}
		}
	})
}
