package checkpoint

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// legacySignedKey is the key testdata/signed-v1.ckpt was signed with.
const legacySignedKey = "legacy test key, not secret"

// TestLegacySignedLoads: testdata/signed-v1.ckpt was written by SaveWithKey before the
// MAC of format 2 existed (commit 3351d00: savedCheckpoint of package training's tests,
// one epoch of logistic regression on 200 MNIST examples, batch 50, signed with
// legacySignedKey). Files of that format still load with their key, and only with it.
func TestLegacySignedLoads(t *testing.T) {
	const path = "testdata/signed-v1.ckpt"
	c, err := LoadWithKey(path, []byte(legacySignedKey))
	if err != nil {
		t.Fatalf("LoadWithKey of a format-1 signed checkpoint: %v", err)
	}
	// 784·10 weights and 10 biases; 200 examples in batches of 50: 4 steps.
	if c.Model != "logreg" || len(c.Params) != 7850 || c.Step != 4 {
		t.Errorf("loaded model %q, %d parameters, step %d; want logreg, 7850, 4", c.Model, len(c.Params), c.Step)
	}
	if _, err := LoadWithKey(path, []byte("another key of sixteen bytes")); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another key: %v, want ErrAuthentication", err)
	}
	if _, signed, err := LoadUnverified(path); err != nil || !signed {
		t.Errorf("LoadUnverified: signed %v, %v", signed, err)
	}
	// The file stores its tensors in another order than the names' (the order the
	// format-1 MAC covers them in), which is what makes that MAC costly to check.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	stream, err := dec.DecodeAll(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLayout(stream)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range l.entries {
		names = append(names, e.name)
	}
	if slices.IsSorted(names) {
		t.Errorf("tensors stored in name order %v: the test file does not exercise the format-1 MAC's order", names)
	}
}

// legacyFileMAC is the MAC of format 1 as SaveWithKey computed it before format 2 (the
// code of commit 3351d00, kept here as the oracle of verifyLegacyMAC, which streams the
// same function): HMAC-SHA256 under key of f's metadata (less the MAC) and tensors in name
// order, length-prefixed.
func legacyFileMAC(f *File, key []byte) []byte {
	h := hmac.New(sha256.New, key)
	str := func(h hash.Hash, s string) {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	str(h, "privtrain-checkpoint-mac/1")
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		if k != keyMAC {
			str(h, k)
			str(h, f.Metadata[k])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Tensors)) {
		t := f.Tensors[name]
		str(h, name)
		str(h, t.DType.String())
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(t.Shape))))
		for _, d := range t.Shape {
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(d)))
		}
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(t.Data))))
		h.Write(t.Data)
	}
	return h.Sum(nil)
}

// interleaved has tensors whose names interleave their dtypes, so that name order
// visits the data section in three ascending runs (a F64, b U8, c F64, d U8, e F32 are
// stored F64 a c, F32 e, U8 b d).
func interleaved() *File {
	return &File{
		Tensors: map[string]Tensor{
			"a": F64([]int{3}, []float64{1, 2, 3}),
			"b": U8([]int{2}, []byte{4, 5}),
			"c": F64(nil, []float64{6}),
			"d": U8([]int{0}, nil),
			"e": F32([]int{2, 1}, []float32{7, 8}),
		},
		Metadata: map[string]string{"user": "x"},
	}
}

// TestLegacyMACStreamed: a file signed in format 1 is accepted under its key when its
// tensors are stored in another order than the MAC covers them (three passes here), and
// refused when a tensor or the metadata changed, or under another key.
func TestLegacyMACStreamed(t *testing.T) {
	key := []byte("legacy key of sixteen bytes")
	sign := func(f *File) []byte {
		f.Metadata[keyMAC] = hex.EncodeToString(legacyFileMAC(f, key))
		var b bytes.Buffer
		if err := Encode(&b, f); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	good := sign(interleaved())
	got, err := Decode(bytes.NewReader(good), withKey(key))
	if err != nil {
		t.Fatalf("format-1 file signed under the key: %v", err)
	}
	if v, _ := got.Tensors["e"].Float32s(); !slices.Equal(v, []float32{7, 8}) {
		t.Errorf("tensor e = %v", v)
	}
	if _, err := Decode(bytes.NewReader(good), withKey([]byte("another key of sixteen"))); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another key: %v", err)
	}
	changed := interleaved()
	mac := legacyFileMAC(changed, key)
	changed.Tensors["c"] = F64(nil, []float64{6.5})
	changed.Metadata[keyMAC] = hex.EncodeToString(mac)
	var b bytes.Buffer
	Encode(&b, changed)
	if _, err := Decode(bytes.NewReader(b.Bytes()), withKey(key)); !errors.Is(err, ErrAuthentication) {
		t.Errorf("a changed tensor under the old MAC: %v", err)
	}
	changed = interleaved()
	changed.Metadata[keyMAC] = hex.EncodeToString(mac)
	changed.Metadata["user"] = "y"
	b.Reset()
	Encode(&b, changed)
	if _, err := Decode(bytes.NewReader(b.Bytes()), withKey(key)); !errors.Is(err, ErrAuthentication) {
		t.Errorf("changed metadata under the old MAC: %v", err)
	}
}

// TestSignedFormat: SaveWithKey's format 2 round-trips under its key; a file whose header
// or data was changed by someone without the key (the checksums made right again, as
// anyone can) is refused with ErrAuthentication (a changed header before the data is
// allocated: TestLoadWithKeyHonestBomb); without a key it reads as a signed file.
func TestSignedFormat(t *testing.T) {
	key := []byte("format 2 key, sixteen+")
	var b bytes.Buffer
	if err := encode(&b, interleaved(), key); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(b.Bytes()), withKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Metadata[keyHeaderMAC]; ok || got.Metadata[keyMAC] == "" || got.Metadata["user"] != "x" {
		t.Errorf("metadata after a keyed decode: %v", got.Metadata)
	}
	if _, err := Decode(bytes.NewReader(b.Bytes()), withKey([]byte("another key of sixteen"))); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another key: %v", err)
	}
	plain, err := Decode(bytes.NewReader(b.Bytes()))
	if err != nil || plain.Metadata[keyMAC] == "" {
		t.Errorf("without a key: %v, metadata %v", err, plain.Metadata)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	stream, err := dec.DecodeAll(b.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseLayout(stream)
	if err != nil {
		t.Fatal(err)
	}
	// A data byte (tensor a's first), then a header byte (the metadata value "x").
	dataAt := 8 + len(l.header)
	userAt := bytes.Index(stream, []byte(`"user":"x"`)) + len(`"user":"`)
	for _, tc := range []struct {
		name string
		at   int
	}{{"data", dataAt}, {"header", userAt}} {
		bad := slices.Clone(stream)
		bad[tc.at] ^= 'x' ^ 'y'
		in := reseal(t, bad)
		if _, err := Decode(bytes.NewReader(in)); err != nil {
			t.Fatalf("%s changed: the resealed file does not decode without a key: %v", tc.name, err)
		}
		if _, err := Decode(bytes.NewReader(in), withKey(key)); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s changed: %v, want ErrAuthentication", tc.name, err)
		}
	}
}

// reseal makes a decompressed stream a valid unsigned container again: its SHA-256, a
// zstd frame with the content checksum and the trailer (what anyone can do).
func reseal(t *testing.T, stream []byte) []byte {
	t.Helper()
	l, err := parseLayout(stream)
	if err != nil {
		t.Fatal(err)
	}
	s := slices.Clone(stream)
	copy(s[l.checksumAt:], strings.Repeat("0", 64))
	sum := sha256.Sum256(s)
	copy(s[l.checksumAt:], hex.EncodeToString(sum[:]))
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(s, nil)
	frameSum := sha256.Sum256(frame)
	return appendTrailer(frame, frameSum[:])
}
