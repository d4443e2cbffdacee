package training

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/nn"
)

func testKey() (k [32]byte) {
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

// TestFeatureHeaderBytes: a header written out byte by byte from the format's description
// parses to its fields, and encode gives the same bytes.
func TestFeatureHeaderBytes(t *testing.T) {
	b := []byte("PTFEATS\n")
	b = append(b, 1, 0, 0, 0, 1, 0, 0, 0)
	for i := range 32 {
		b = append(b, byte(i))
	}
	b = append(b, 3, 0, 0, 0, 0, 0, 0, 0) // count 3
	b = append(b, 2, 0, 0, 0)             // ndim 2
	b = append(b, 5, 0, 0, 0, 7, 1, 0, 0) // dims 5, 263
	h, n, err := parseFeatureHeader(append(slices.Clone(b), 0xAA, 0xBB))
	if err != nil {
		t.Fatal(err)
	}
	if n != len(b) || h.count != 3 || !slices.Equal(h.shape, []int{5, 263}) || h.key != testKey() || h.values() != 3*5*263 {
		t.Fatalf("parsed %+v, %d bytes", h, n)
	}
	if !bytes.Equal(h.encode(), b) {
		t.Errorf("encode: %x, want %x", h.encode(), b)
	}
}

// writeTestFile writes count examples of shape [2 3] with awkward values (−0, the
// smallest subnormal, ±large) and returns the path and the values.
func writeTestFile(t *testing.T, count int) (string, []float32) {
	t.Helper()
	vals := make([]float32, count*6)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	vals[0], vals[1], vals[2] = float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.MaxFloat32
	path := filepath.Join(t.TempDir(), "f.features")
	next := 0
	err := writeFeatureFile(path, featureHeader{key: testKey(), count: count, shape: []int{2, 3}}, nil, func() []float32 {
		k := min(5, len(vals)-next) // chunks that do not align with examples
		next += k
		return vals[next-k : next]
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, vals
}

// TestFeatureFileRoundTrip: the values come back bit for bit, the file is the header, the
// little-endian payload and the SHA-256 of both, and it is readable by its owner only.
func TestFeatureFileRoundTrip(t *testing.T) {
	path, vals := writeTestFile(t, 4)
	got, err := readFeatureFile(path, testKey(), 4, []int{2, 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		if math.Float32bits(got[i]) != math.Float32bits(vals[i]) {
			t.Fatalf("value %d: %v, want %v", i, got[i], vals[i])
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hlen := featureFixedHeader + 2*4
	if len(raw) != hlen+4*len(vals)+32 {
		t.Fatalf("file has %d bytes", len(raw))
	}
	if math.Float32frombits(binary.LittleEndian.Uint32(raw[hlen+4*5:])) != vals[5] {
		t.Error("payload is not little-endian float32 after the header")
	}
	if sum := sha256.Sum256(raw[:len(raw)-32]); !bytes.Equal(sum[:], raw[len(raw)-32:]) {
		t.Error("the file does not end in the SHA-256 of its contents")
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		t.Errorf("mode %v: readable by others", st.Mode().Perm())
	}
	other := testKey()
	other[31] ^= 1
	for name, read := range map[string]func() error{
		"key":   func() error { _, err := readFeatureFile(path, other, 4, []int{2, 3}, nil); return err },
		"count": func() error { _, err := readFeatureFile(path, testKey(), 5, []int{2, 3}, nil); return err },
		"shape": func() error { _, err := readFeatureFile(path, testKey(), 4, []int{3, 2}, nil); return err },
	} {
		if err := read(); !errors.Is(err, errFeatureFile) {
			t.Errorf("other %s: %v, want errFeatureFile", name, err)
		}
	}
}

// TestFeatureFileCorruption: every single flipped bit and every truncation is detected.
func TestFeatureFileCorruption(t *testing.T) {
	path, _ := writeTestFile(t, 3)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	for i := range raw {
		for _, bit := range []byte{1, 0x80} {
			b := slices.Clone(raw)
			b[i] ^= bit
			if err := os.WriteFile(bad, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := readFeatureFile(bad, testKey(), 3, []int{2, 3}, nil); !errors.Is(err, errFeatureFile) {
				t.Fatalf("byte %d ^ %#x: %v, want errFeatureFile", i, bit, err)
			}
		}
	}
	for n := range len(raw) {
		if err := os.WriteFile(bad, raw[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readFeatureFile(bad, testKey(), 3, []int{2, 3}, nil); !errors.Is(err, errFeatureFile) {
			t.Fatalf("truncated to %d bytes: %v, want errFeatureFile", n, err)
		}
	}
	if err := os.WriteFile(bad, append(raw, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readFeatureFile(bad, testKey(), 3, []int{2, 3}, nil); !errors.Is(err, errFeatureFile) {
		t.Fatalf("extended by a byte: %v, want errFeatureFile", err)
	}
}

// FuzzFeatureHeader: the header parser never panics, and a header it accepts encodes
// back to the bytes it read.
func FuzzFeatureHeader(f *testing.F) {
	good := featureHeader{key: testKey(), count: 70000, shape: []int{81, 7, 7}}.encode()
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:featureFixedHeader])
	f.Add([]byte{})
	f.Add([]byte("PTFEATS\n"))
	huge := slices.Clone(good)
	binary.LittleEndian.PutUint64(huge[48:], math.MaxUint64)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := parseFeatureHeader(b)
		if err != nil {
			if !errors.Is(err, errFeatureFile) {
				t.Fatalf("error %v does not wrap errFeatureFile", err)
			}
			return
		}
		if n > len(b) || !bytes.Equal(h.encode(), b[:n]) {
			t.Fatalf("accepted %x as %+v (%d bytes), which encodes to %x", b, h, n, h.encode())
		}
		if h.values() < 0 || h.values() > featureMaxValues {
			t.Fatalf("accepted %d values", h.values())
		}
	})
}

// TestCachedFeaturesServedAndChecked: a cache hit serves the file's values (a changed
// middle example with a valid checksum comes back changed), while a file whose first
// example differs from what the front end computes now is refused as written by
// another version of the front end.
func TestCachedFeaturesServedAndChecked(t *testing.T) {
	spec := nn.Spec{Name: "s", InputShape: []int{1, 8, 8}, NumClasses: 2, Layers: []layers.Layer{
		layers.Scattering2D{J: 1, L: 4}, layers.Flatten{}, layers.Dense{Units: 2},
	}}
	m, err := nn.New(spec, 4)
	if err != nil {
		t.Fatal(err)
	}
	pix, lab := make([]byte, 5*64), make([]byte, 5)
	for i := range pix {
		pix[i] = byte(i * 7)
	}
	ds, err := datasets.NewImages([]int{1, 8, 8}, 2, pix, lab)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, use, err := CachedFrontEndFeatures(m, ds, dir)
	if err != nil || use.Loaded || use.Problem != "" {
		t.Fatalf("first call: %+v, %v", use, err)
	}
	key, err := featureKey(t.Context(), m, ds)
	if err != nil {
		t.Fatal(err)
	}
	out := m.FeatureShape()
	vals, err := readFeatureFile(use.File, key, 5, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(i int) {
		v := slices.Clone(vals)
		v[i] += 1
		if err := writeFeatureFile(use.File, featureHeader{key: key, count: 5, shape: out}, nil, func() []float32 { return v }); err != nil {
			t.Fatal(err)
		}
	}
	size := len(vals) / 5
	rewrite(2*size + 3)
	got, use2, err := CachedFrontEndFeatures(m, ds, dir)
	if err != nil || !use2.Loaded {
		t.Fatalf("second call: %+v, %v", use2, err)
	}
	x := make([]float32, size)
	got.Example(2, x)
	if x[3] != vals[2*size+3]+1 {
		t.Errorf("example 2 value 3 is %v, want the file's %v", x[3], vals[2*size+3]+1)
	}
	rewrite(1)
	_, use3, err := CachedFrontEndFeatures(m, ds, dir)
	if err != nil || use3.Loaded || !strings.Contains(use3.Problem, "changed") || !strings.Contains(use3.Problem, use.File) {
		t.Fatalf("changed first example: %+v, %v", use3, err)
	}
	if v, err := readFeatureFile(use.File, key, 5, out, nil); err != nil || !slices.Equal(v, vals) {
		t.Errorf("the file was not rewritten with the computed features: %v", err)
	}
}

// TestFeatureFileKeyed: a file written under a key reads back under it; under another
// key, without one, or written without one and read with one, it is refused.
func TestFeatureFileKeyed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.features")
	vals := []float32{1, 2, 3, 4, 5, 6}
	write := func(key []byte) {
		t.Helper()
		if err := writeFeatureFile(path, featureHeader{key: testKey(), count: 1, shape: []int{2, 3}}, key, func() []float32 { return vals }); err != nil {
			t.Fatal(err)
		}
	}
	k1, k2 := []byte("key one, sixteen+"), []byte("key two, sixteen+")
	write(k1)
	if got, err := readFeatureFile(path, testKey(), 1, []int{2, 3}, k1); err != nil || !slices.Equal(got, vals) {
		t.Fatalf("same key: %v, %v", got, err)
	}
	for name, key := range map[string][]byte{"other key": k2, "no key": nil} {
		if _, err := readFeatureFile(path, testKey(), 1, []int{2, 3}, key); !errors.Is(err, errFeatureFile) {
			t.Errorf("%s: err = %v, want errFeatureFile", name, err)
		}
	}
	write(nil)
	if _, err := readFeatureFile(path, testKey(), 1, []int{2, 3}, k1); !errors.Is(err, errFeatureFile) || !strings.Contains(err.Error(), "MAC") {
		t.Errorf("unkeyed file read with a key: err = %v", err)
	}
}
