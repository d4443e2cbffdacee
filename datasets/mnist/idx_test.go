package mnist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/internal/safeio/safeiotest"
)

// The tests write IDX files with their own encoder, from the format's description on
// the MNIST page (http://yann.lecun.com/exdb/mnist/, "FILE FORMATS"), not with the
// package's code.

func idx3(magic uint32, n, rows, cols int, pixels []byte) []byte {
	var b bytes.Buffer
	for _, v := range []uint32{magic, uint32(n), uint32(rows), uint32(cols)} {
		binary.Write(&b, binary.BigEndian, v)
	}
	b.Write(pixels)
	return b.Bytes()
}

func idx1(magic uint32, labels []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, uint32(len(labels)))
	b.Write(labels)
	return b.Bytes()
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pattern returns n images of rows×cols whose pixel j of image i is (7i+j) mod 256.
func pattern(n, rows, cols int) []byte {
	px := make([]byte, n*rows*cols)
	for i := range n {
		for j := range rows * cols {
			px[i*rows*cols+j] = byte(7*i + j)
		}
	}
	return px
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// standardDir writes a small valid data set: 5 training and 3 test images of 4×3.
func standardDir(t *testing.T, gzipped bool) (dir string, trainPx, testPx, trainLab, testLab []byte) {
	dir = t.TempDir()
	trainPx, testPx = pattern(5, 4, 3), pattern(3, 4, 3)
	trainLab, testLab = []byte{0, 9, 3, 3, 1}, []byte{2, 8, 0}
	files := map[string][]byte{
		TrainImages: idx3(0x803, 5, 4, 3, trainPx),
		TrainLabels: idx1(0x801, trainLab),
		TestImages:  idx3(0x803, 3, 4, 3, testPx),
		TestLabels:  idx1(0x801, testLab),
	}
	if gzipped {
		for name, data := range files {
			delete(files, name)
			files[name+".gz"] = gz(t, data)
		}
	}
	writeFiles(t, dir, files)
	return
}

func TestLoad(t *testing.T) {
	for _, gzipped := range []bool{false, true} {
		dir, trainPx, testPx, trainLab, testLab := standardDir(t, gzipped)
		for _, load := range []func(string) (train, test *datasets.Images, err error){Load, LoadFashion} {
			train, test, err := load(dir)
			if err != nil {
				t.Fatalf("gzip %v: %v", gzipped, err)
			}
			checkImages(t, train, []int{1, 4, 3}, trainPx, trainLab)
			checkImages(t, test, []int{1, 4, 3}, testPx, testLab)
		}
	}
}

// TestLoadTrain: LoadTrain and LoadFashionTrain read the training pair as Load does,
// with the test files missing or damaged, and name a missing training file.
func TestLoadTrain(t *testing.T) {
	for _, gzipped := range []bool{false, true} {
		dir, trainPx, _, trainLab, _ := standardDir(t, gzipped)
		suffix := map[bool]string{false: "", true: ".gz"}[gzipped]
		os.Remove(filepath.Join(dir, TestLabels+suffix))
		if err := os.WriteFile(filepath.Join(dir, TestImages+suffix), []byte("damaged"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Load(dir); err == nil {
			t.Fatalf("gzip %v: Load without the test labels succeeded", gzipped)
		}
		for _, load := range []func(string) (*datasets.Images, error){LoadTrain, LoadFashionTrain} {
			train, err := load(dir)
			if err != nil {
				t.Fatalf("gzip %v: %v", gzipped, err)
			}
			checkImages(t, train, []int{1, 4, 3}, trainPx, trainLab)
		}
		os.Remove(filepath.Join(dir, TrainLabels+suffix))
		if _, err := LoadTrain(dir); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), TrainLabels) || !strings.Contains(err.Error(), dir) {
			t.Errorf("gzip %v: missing training labels: %v", gzipped, err)
		}
		if _, err := LoadFashionTrain(dir); !strings.Contains(fmt.Sprint(err), "apt install dataset-fashion-mnist") {
			t.Errorf("gzip %v: missing Fashion-MNIST training labels: %v", gzipped, err)
		}
	}
	if _, err := LoadTrain(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}

func checkImages(t *testing.T, m *datasets.Images, shape []int, px, labels []byte) {
	t.Helper()
	if m.Len() != len(labels) || m.NumClasses() != 10 || !slices.Equal(m.Shape(), shape) {
		t.Fatalf("Len %d NumClasses %d Shape %v, want %d 10 %v", m.Len(), m.NumClasses(), m.Shape(), len(labels), shape)
	}
	size := len(px) / len(labels)
	dst := make([]float32, size)
	for i, want := range labels {
		if l := m.Example(i, dst); l != int(want) {
			t.Errorf("example %d: label %d, want %d", i, l, want)
		}
		for j, v := range dst {
			if want := float32(px[i*size+j]) / 255; v != want {
				t.Fatalf("example %d value %d = %v, want %v", i, j, v, want)
			}
		}
	}
}

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	// names need not be standard; gzip is recognised by content
	writeFiles(t, dir, map[string][]byte{
		"imgs.bin": gz(t, idx3(0x803, 2, 2, 2, pattern(2, 2, 2))),
		"labs.bin": idx1(0x801, []byte{4, 5}),
	})
	m, err := LoadFiles(filepath.Join(dir, "imgs.bin"), filepath.Join(dir, "labs.bin"))
	if err != nil {
		t.Fatal(err)
	}
	checkImages(t, m, []int{1, 2, 2}, pattern(2, 2, 2), []byte{4, 5})
	if _, err := LoadFiles(filepath.Join(dir, "nope"), filepath.Join(dir, "labs.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	good := map[string][]byte{
		TrainImages: idx3(0x803, 2, 2, 2, pattern(2, 2, 2)),
		TrainLabels: idx1(0x801, []byte{1, 2}),
		TestImages:  idx3(0x803, 1, 2, 2, pattern(1, 2, 2)),
		TestLabels:  idx1(0x801, []byte{3}),
	}
	corruptGzip := gz(t, good[TrainImages])
	corruptGzip[len(corruptGzip)-6] ^= 0xff // inside the CRC-32 trailer
	for _, tc := range []struct {
		name    string
		file    string // replaced file (written under this name instead of the good one)
		data    []byte
		want    error
		inError string // text the message must contain
	}{
		{"label magic in image file", TrainImages, idx1(0x801, []byte{1, 2}), ErrMagic, "0x00000801"},
		{"image magic in label file", TrainLabels, idx3(0x803, 2, 2, 2, pattern(2, 2, 2)), ErrMagic, TrainLabels},
		{"int32 data type", TrainImages, idx3(0x0c03, 2, 2, 2, pattern(2, 2, 2)), ErrMagic, "0x00000c03"},
		{"zero images", TrainImages, idx3(0x803, 0, 2, 2, nil), ErrDimensions, "0 images"},
		{"zero rows", TrainImages, idx3(0x803, 2, 0, 2, nil), ErrDimensions, "2 images of 0×2"},
		{"huge side", TrainImages, idx3(0x803, 1, 1<<20, 1, nil), ErrDimensions, TrainImages},
		{"zero labels", TrainLabels, idx1(0x801, nil), ErrDimensions, "0 labels"},
		{"empty file", TrainImages, nil, ErrTruncated, "header"},
		{"short header", TrainLabels, []byte{0, 0, 8, 1, 0}, ErrTruncated, "header"},
		{"short pixels", TrainImages, idx3(0x803, 2, 2, 2, pattern(2, 2, 2))[:16+7], ErrTruncated, "7 of 8"},
		{"short labels", TrainLabels, idx1(0x801, []byte{1, 2})[:9], ErrTruncated, "1 of 2"},
		{"trailing pixels", TrainImages, append(idx3(0x803, 2, 2, 2, pattern(2, 2, 2)), 0), ErrTrailingData, TrainImages},
		{"count mismatch", TrainLabels, idx1(0x801, []byte{1, 2, 3}), ErrCountMismatch, "2 images"},
		{"label 10", TestLabels, idx1(0x801, []byte{10}), ErrLabelRange, "label 10 of item 0"},
		{"label 255", TrainLabels, idx1(0x801, []byte{0, 255}), ErrLabelRange, "item 1"},
		{"test images 3×2", TestImages, idx3(0x803, 1, 3, 2, pattern(1, 3, 2)), ErrDimensions, "[1 3 2]"},
		{"truncated gzip", TrainImages, gz(t, good[TrainImages])[:30], ErrTruncated, TrainImages},
		{"gzip checksum", TrainImages, corruptGzip, gzip.ErrChecksum, TrainImages},
	} {
		dir := t.TempDir()
		files := maps.Clone(good)
		files[tc.file] = tc.data
		writeFiles(t, dir, files)
		_, _, err := Load(dir)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.inError) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.inError)
		}
	}
}

func TestLoadMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	_, _, err := Load(dir)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "Download") {
		t.Errorf("missing directory: %v", err)
	}
	_, _, err = LoadFashion(dir)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "apt install dataset-fashion-mnist") {
		t.Errorf("missing Fashion-MNIST directory: %v", err)
	}

	dir, _, _, _, _ = standardDir(t, true)
	os.Remove(filepath.Join(dir, TestLabels+".gz"))
	_, _, err = Load(dir)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), TestLabels) || !strings.Contains(err.Error(), dir) {
		t.Errorf("missing file: %v", err)
	}
}

// Decoding headers that promise far more data than there is must not allocate for the
// promise (a fuzzer would run out of memory otherwise).
func TestDecodeDoesNotTrustHeader(t *testing.T) {
	data := idx3(0x803, 100_000, 64, 64, []byte{1, 2, 3}) // 410 MB claimed, under maxData
	var ms1, ms2 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	if _, _, _, _, err := decodeImages(bytes.NewReader(data), 0); !errors.Is(err, ErrTruncated) {
		t.Fatalf("error %v, want ErrTruncated", err)
	}
	runtime.ReadMemStats(&ms2)
	if grown := ms2.TotalAlloc - ms1.TotalAlloc; grown > 8<<20 {
		t.Errorf("decoding a 19-byte file allocated %d bytes", grown)
	}
}

// A gzipped IDX file whose size trailer claims 4 GiB reserved 4 GiB before a byte of data
// was read: 35 bytes that crash the runtime under a memory limit.
func TestGzipTrailerNotTrusted(t *testing.T) {
	z := gz(t, idx3(0x803, 500_000, 32, 32, nil)) // a header claiming 512 MB, no pixels
	binary.LittleEndian.PutUint32(z[len(z)-4:], 0xffffffff)
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{TrainImages + ".gz": z, TrainLabels: idx1(0x801, []byte{1})})
	var err error
	grown := safeiotest.Allocated(func() { _, err = LoadTrain(dir) })
	if err == nil || !strings.Contains(err.Error(), "gzip: invalid checksum") { // the data ends at the header
		t.Errorf("error %v, want gzip's invalid checksum", err)
	}
	if grown > 16<<20 {
		t.Errorf("a %d-byte file made the reader allocate %d bytes", len(z), grown)
	}
}

// A gzip bomb of 1 MB claiming and holding 1 GiB of pixels (a real data set holds at most
// 547 MB) is refused at its header, before its body is decompressed or allocated.
func TestGzipBombRefused(t *testing.T) {
	const n, side = 1 << 20, 32
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(idx3(0x803, n, side, side, nil))
	if _, err := io.CopyN(zw, safeiotest.Zeros, 8<<20); err != nil { // enough to show intent; the reader must stop at the header
		t.Fatal(err)
	}
	zw.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{TrainImages + ".gz": b.Bytes(), TrainLabels: idx1(0x801, []byte{1})})
	var err error
	grown := safeiotest.Allocated(func() { _, err = LoadTrain(dir) })
	if !errors.Is(err, ErrDimensions) || !strings.Contains(err.Error(), "1048576 images of 32×32") {
		t.Errorf("error %v, want ErrDimensions naming the claim", err)
	}
	if grown > 16<<20 {
		t.Errorf("refusing the bomb allocated %d bytes", grown)
	}
}

// A FIFO where an IDX file should be blocked the loader forever.
func TestNonRegularRefused(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{TrainLabels: idx1(0x801, []byte{1})})
	if err := syscall.Mkfifo(filepath.Join(dir, TrainImages), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	_, err := LoadTrain(dir)
	if !errors.Is(err, safeio.ErrNotRegular) || !strings.Contains(err.Error(), TrainImages) {
		t.Errorf("error %v, want ErrNotRegular naming the file", err)
	}
	if _, err := LoadFiles(dir, filepath.Join(dir, TrainLabels)); !errors.Is(err, safeio.ErrNotRegular) {
		t.Errorf("LoadFiles of a directory: %v, want ErrNotRegular", err)
	}
}
