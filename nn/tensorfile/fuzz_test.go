package tensorfile

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func fuzzSeedFile() *File {
	return &File{
		Tensors: map[string]Tensor{
			"w":     F32([]int{2, 2}, []float32{1, 2, 3, 4}),
			"s":     I64(nil, []int64{7}),
			"empty": F64([]int{0}, nil),
			"rng":   U8([]int{3}, []byte{9, 8, 7}),
		},
		Metadata: map[string]string{"k": "v"},
	}
}

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, and whatever it
// accepts must survive a re-encode unchanged.
func FuzzDecode(f *testing.F) {
	var good bytes.Buffer
	if err := Encode(&good, fuzzSeedFile()); err != nil {
		f.Fatal(err)
	}
	var empty bytes.Buffer
	if err := Encode(&empty, &File{}); err != nil {
		f.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	f.Add(good.Bytes())
	f.Add(empty.Bytes())
	f.Add(good.Bytes()[:good.Len()/2])
	f.Add(good.Bytes()[:good.Len()-trailerSize])
	f.Add(append(slices.Clone(good.Bytes()), 0))
	f.Add(refAttn)
	f.Add(enc.EncodeAll(refAttn, nil))
	f.Add(enc.EncodeAll([]byte("hello"), nil))
	f.Add([]byte{})
	f.Add([]byte(zstdMagic))
	f.Add(zstdBomb(nil, 4<<20, -1))                             // zeros, no declared size
	f.Add(zstdBomb(safetensorsHead(1<<20, true), 1<<19, 1<<19)) // a header claiming more than the frame
	f.Add(honestBomb(1<<20, false))                             // a claim the frame can hold
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Decode(bytes.NewReader(in), WithMaxSize(1<<24))
		if err != nil {
			if !isKnownKind(err) {
				t.Fatalf("error %v matches no sentinel", err)
			}
			return
		}
		var again bytes.Buffer
		if err := Encode(&again, got); err != nil {
			t.Fatalf("re-encoding an accepted checkpoint: %v", err)
		}
		back, err := Decode(&again)
		if err != nil {
			t.Fatalf("decoding the re-encoded checkpoint: %v", err)
		}
		sameFile(t, back, got)
	})
}

// FuzzParseLayout fuzzes the safetensors parser directly, where the checksums do not
// stand between the fuzzer and the JSON: it must never panic, and what it accepts must
// describe the data section exactly and survive our writer unchanged.
func FuzzParseLayout(f *testing.F) {
	for _, s := range [][]byte{refAttn, refAttnPadded, refEmpty, refMetadata} {
		f.Add(s)
	}
	var good bytes.Buffer
	if err := Encode(&good, fuzzSeedFile()); err != nil {
		f.Fatal(err)
	}
	dec, _ := zstd.NewReader(nil)
	s, err := dec.DecodeAll(good.Bytes()[:good.Len()-trailerSize], nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s)
	f.Add(stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{}}`, 1))
	f.Add(stream(`{"__metadata__":{"privtrain.sha256":"\u0030"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		// The checks after decompression must hold whatever the stream: no panic, a
		// sentinel error, or a File that survives Encode and Decode.
		if got, err := decodeStream(in); err != nil {
			if !isKnownKind(err) {
				t.Fatalf("decodeStream error %v matches no sentinel", err)
			}
		} else {
			var again bytes.Buffer
			if err := Encode(&again, got); err != nil {
				t.Fatalf("re-encoding an accepted stream: %v", err)
			}
			back, err := Decode(&again)
			if err != nil {
				t.Fatalf("decoding the re-encoded stream: %v", err)
			}
			sameFile(t, back, got)
		}

		l, err := parseLayout(in)
		if err != nil {
			return
		}
		var total uint64
		for _, e := range l.entries {
			n := uint64(e.dtype.Size())
			for _, d := range e.shape {
				n *= uint64(d)
			}
			if e.begin != total || e.end-e.begin != n {
				t.Fatalf("entry %+v does not follow offset %d with %d bytes", e, total, n)
			}
			total = e.end
		}
		if total != uint64(len(l.data)) || 8+len(l.header)+len(l.data) != len(in) {
			t.Fatalf("entries cover %d of %d data bytes", total, len(l.data))
		}
		for _, k := range []string{checksumKey, MACKey, keyHeaderMAC} {
			if at := *l.at(k); at >= 0 && string(in[at:at+len(l.metadata[k])]) != l.metadata[k] {
				t.Fatalf("%s position %d does not hold the value", k, at)
			}
		}
		// Rewrite in our canonical form and parse again: same tensors, same metadata.
		entries := slices.Clone(l.entries)
		slices.SortStableFunc(entries, writeOrder)
		var off uint64
		var data []byte
		for i, e := range entries {
			data = append(data, l.data[e.begin:e.end]...)
			entries[i].begin, entries[i].end = off, off+e.end-e.begin
			off = entries[i].end
		}
		header, _, err := encodeHeader(l.metadata, entries)
		if err != nil {
			return // a header that grew past the limit when rewritten compactly
		}
		re := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		re = append(append(re, header...), data...)
		l2, err := parseLayout(re)
		if err != nil {
			t.Fatalf("rewritten stream rejected: %v\n%q", err, re)
		}
		if len(l2.entries) != len(l.entries) || len(l2.metadata) != len(l.metadata) {
			t.Fatalf("rewrite changed the content: %+v vs %+v", l2, l)
		}
		for k, v := range l.metadata {
			if l2.metadata[k] != v {
				t.Fatalf("metadata %q: %q became %q", k, v, l2.metadata[k])
			}
		}
	})
}

// FuzzDecodeKeyed feeds arbitrary bytes to Decode with a key (WithKey, the read of
// checkpoint.LoadWithKey: the MAC fields of the header, the header's MAC before any
// allocation, the stream's MAC as it is read, format 1's streamed MAC): it must never panic, refuse with a known
// kind, and whatever it accepts (with its MAC) must survive a re-encode under the key.
func FuzzDecodeKeyed(f *testing.F) {
	key := []byte("fuzz key of sixteen bytes")
	var signed, legacy bytes.Buffer
	if err := encode(&signed, fuzzSeedFile(), key); err != nil {
		f.Fatal(err)
	}
	old := fuzzSeedFile()
	old.Metadata[MACKey] = hex.EncodeToString(legacyFileMAC(old, key))
	if err := Encode(&legacy, old); err != nil {
		f.Fatal(err)
	}
	f.Add(signed.Bytes())
	f.Add(legacy.Bytes())
	f.Add(signed.Bytes()[:signed.Len()/2])
	f.Add(zstdBomb(keyedHead(1<<20, FormatSigned), 1<<20+600, -1))
	f.Add(zstdBomb(keyedHead(1<<20, Format), 1<<20+600, -1))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Decode(bytes.NewReader(in), WithMaxSize(1<<24), WithKey(key))
		if err != nil {
			if !isKnownKind(err) && !errors.Is(err, ErrAuthentication) {
				t.Fatalf("error %v matches no sentinel", err)
			}
			return
		}
		if _, ok := got.Metadata[MACKey]; !ok {
			t.Fatal("accepted without a MAC")
		}
		var again bytes.Buffer
		if err := encode(&again, &File{Tensors: got.Tensors, Metadata: without(got.Metadata, MACKey)}, key); err != nil {
			t.Fatalf("re-encoding an accepted checkpoint: %v", err)
		}
		back, err := Decode(&again, WithKey(key))
		if err != nil {
			t.Fatalf("decoding the re-encoded checkpoint: %v", err)
		}
		sameFile(t, &File{Tensors: back.Tensors}, &File{Tensors: got.Tensors})
	})
}

func without(m map[string]string, key string) map[string]string {
	out := maps.Clone(m)
	delete(out, key)
	return out
}

func isKnownKind(err error) bool {
	for _, k := range []error{ErrCorrupt, ErrNotCheckpoint, ErrUnsupportedVersion, ErrTooLarge} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

func sameFile(t *testing.T, got, want *File) {
	t.Helper()
	if len(got.Tensors) != len(want.Tensors) || len(got.Metadata) != len(want.Metadata) {
		t.Fatalf("got %d tensors %d metadata, want %d and %d", len(got.Tensors), len(got.Metadata), len(want.Tensors), len(want.Metadata))
	}
	for name, w := range want.Tensors {
		g := got.Tensors[name]
		if g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("tensor %q differs", name)
		}
	}
	for k, v := range want.Metadata {
		if got.Metadata[k] != v {
			t.Fatalf("metadata %q differs", k)
		}
	}
}
