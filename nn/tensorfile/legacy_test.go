package tensorfile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// legacyFileMAC is the MAC of format 1 as checkpoint.SaveWithKey computed it before
// format 2 (the code of commit 3351d00, kept here as the oracle of verifyLegacyMAC, which
// streams the same function): HMAC-SHA256 under key of f's metadata (less the MAC) and tensors in name
// order, length-prefixed.
func legacyFileMAC(f *File, key []byte) []byte {
	h := hmac.New(sha256.New, key)
	str := func(h hash.Hash, s string) {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	str(h, "privtrain-checkpoint-mac/1")
	for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
		if k != MACKey {
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
		f.Metadata[MACKey] = hex.EncodeToString(legacyFileMAC(f, key))
		var b bytes.Buffer
		if err := Encode(&b, f); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	good := sign(interleaved())
	got, err := Decode(bytes.NewReader(good), WithKey(key))
	if err != nil {
		t.Fatalf("format-1 file signed under the key: %v", err)
	}
	if v, _ := got.Tensors["e"].Float32s(); !slices.Equal(v, []float32{7, 8}) {
		t.Errorf("tensor e = %v", v)
	}
	if _, err := Decode(bytes.NewReader(good), WithKey([]byte("another key of sixteen"))); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another key: %v", err)
	}
	changed := interleaved()
	mac := legacyFileMAC(changed, key)
	changed.Tensors["c"] = F64(nil, []float64{6.5})
	changed.Metadata[MACKey] = hex.EncodeToString(mac)
	var b bytes.Buffer
	Encode(&b, changed)
	if _, err := Decode(bytes.NewReader(b.Bytes()), WithKey(key)); !errors.Is(err, ErrAuthentication) {
		t.Errorf("a changed tensor under the old MAC: %v", err)
	}
	changed = interleaved()
	changed.Metadata[MACKey] = hex.EncodeToString(mac)
	changed.Metadata["user"] = "y"
	b.Reset()
	Encode(&b, changed)
	if _, err := Decode(bytes.NewReader(b.Bytes()), WithKey(key)); !errors.Is(err, ErrAuthentication) {
		t.Errorf("changed metadata under the old MAC: %v", err)
	}
}

// TestSignedFormat: SaveWithKey's format 2 round-trips under its key; a file whose header
// or data was changed by someone without the key (the checksums made right again, as
// anyone can) is refused with ErrAuthentication (a changed header before the data is
// allocated: TestKeyedReadHonestBomb); without a key it reads as a signed file.
func TestSignedFormat(t *testing.T) {
	key := []byte("format 2 key, sixteen+")
	var b bytes.Buffer
	if err := encode(&b, interleaved(), key); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(bytes.NewReader(b.Bytes()), WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Metadata[keyHeaderMAC]; ok || got.Metadata[MACKey] == "" || got.Metadata["user"] != "x" {
		t.Errorf("metadata after a keyed decode: %v", got.Metadata)
	}
	if _, err := Decode(bytes.NewReader(b.Bytes()), WithKey([]byte("another key of sixteen"))); !errors.Is(err, ErrAuthentication) {
		t.Errorf("another key: %v", err)
	}
	plain, err := Decode(bytes.NewReader(b.Bytes()))
	if err != nil || plain.Metadata[MACKey] == "" {
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
		if _, err := Decode(bytes.NewReader(in), WithKey(key)); !errors.Is(err, ErrAuthentication) {
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
