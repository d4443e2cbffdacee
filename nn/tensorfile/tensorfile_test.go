package tensorfile_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/privtrain/privtrain/nn/tensorfile"
)

// hexBytes decodes a hex literal; the test's expected encodings are written out by
// hand from the IEEE 754 and two's complement definitions, not computed by the code.
func hexBytes(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// allDTypes is a File with one tensor of every dtype, with expected little-endian
// bytes written out by hand.
type expected struct {
	dtype string
	shape []int
	data  []byte
}

func allDTypesFile() (*tensorfile.File, map[string]expected) {
	want := map[string]expected{
		// 1.5 = 0x3FF8000000000000, -0.0 = 0x8000000000000000, NaN payload kept bit for bit.
		"b.f64":      {"F64", []int{3}, hexBytes("000000000000F83F 0000000000000080 010000000000F87F")},
		"a.empty":    {"F64", []int{0, 3}, []byte{}},
		"f32":        {"F32", []int{1, 2}, hexBytes("000000C0 0000003F")}, // -2, 0.5
		"i64":        {"I64", []int{}, hexBytes("FEFFFFFFFFFFFFFF")},      // scalar -2
		"u8":         {"U8", []int{3}, []byte{1, 2, 255}},
		"bool":       {"BOOL", []int{2}, []byte{1, 0}},
		"i8":         {"I8", []int{1}, []byte{0x80}},
		"i16":        {"I16", []int{1}, hexBytes("0201")},             // 0x0102
		"u16":        {"U16", []int{1}, hexBytes("FFFF")},             // 65535
		"f16":        {"F16", []int{1}, hexBytes("003C")},             // 1.0 = 0x3C00
		"bf16":       {"BF16", []int{1}, hexBytes("803F")},            // 1.0 = 0x3F80
		"i32":        {"I32", []int{1}, hexBytes("FFFFFFFF")},         // -1
		"u32":        {"U32", []int{1}, hexBytes("78563412")},         // 0x12345678
		"u64":        {"U64", []int{1}, hexBytes("0100000000000080")}, // 2^63+1
		"f8e5m2":     {"F8_E5M2", []int{1}, []byte{0x3C}},             // 1.0
		"f8e4m3":     {"F8_E4M3", []int{1}, []byte{0x38}},             // 1.0
		"ünïcode<&>": {"U8", []int{1, 1}, []byte{7}},
	}
	f := &tensorfile.File{
		Tensors: map[string]tensorfile.Tensor{
			"b.f64":      tensorfile.F64([]int{3}, []float64{1.5, math.Copysign(0, -1), math.Float64frombits(0x7FF8000000000001)}),
			"a.empty":    tensorfile.F64([]int{0, 3}, nil),
			"f32":        tensorfile.F32([]int{1, 2}, []float32{-2, 0.5}),
			"i64":        tensorfile.I64(nil, []int64{-2}),
			"u8":         tensorfile.U8([]int{3}, []byte{1, 2, 255}),
			"bool":       {DType: tensorfile.Bool, Shape: []int{2}, Data: []byte{1, 0}},
			"i8":         {DType: tensorfile.Int8, Shape: []int{1}, Data: []byte{0x80}},
			"i16":        {DType: tensorfile.Int16, Shape: []int{1}, Data: []byte{2, 1}},
			"u16":        {DType: tensorfile.Uint16, Shape: []int{1}, Data: []byte{0xFF, 0xFF}},
			"f16":        {DType: tensorfile.Float16, Shape: []int{1}, Data: []byte{0, 0x3C}},
			"bf16":       {DType: tensorfile.BFloat16, Shape: []int{1}, Data: []byte{0x80, 0x3F}},
			"i32":        {DType: tensorfile.Int32, Shape: []int{1}, Data: []byte{0xFF, 0xFF, 0xFF, 0xFF}},
			"u32":        {DType: tensorfile.Uint32, Shape: []int{1}, Data: []byte{0x78, 0x56, 0x34, 0x12}},
			"u64":        {DType: tensorfile.Uint64, Shape: []int{1}, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0x80}},
			"f8e5m2":     {DType: tensorfile.Float8E5M2, Shape: []int{1}, Data: []byte{0x3C}},
			"f8e4m3":     {DType: tensorfile.Float8E4M3, Shape: []int{1}, Data: []byte{0x38}},
			"ünïcode<&>": tensorfile.U8([]int{1, 1}, []byte{7}),
		},
		Metadata: map[string]string{"model": "cnn", "note": "ε = 3, \"quoted\"\n<tag>", "empty": ""},
	}
	return f, want
}

// safetensorsOrder is the dtype order of huggingface/safetensors' Dtype enum; its
// writer lays tensors out by descending position here, then by name.
var safetensorsOrder = []string{"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"}

func encode(t testing.TB, f *tensorfile.File) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tensorfile.Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decompress(t testing.TB, b []byte) []byte {
	t.Helper()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEncodeLayoutByHand reads an encoded checkpoint without this package: zstd, then
// the safetensors layout by its specification, then the checksum by its definition.
func TestEncodeLayoutByHand(t *testing.T) {
	f, want := allDTypesFile()
	compressed := encode(t, f)

	var h zstd.Header
	if err := h.Decode(compressed); err != nil || !h.HasCheckSum || !h.HasFCS {
		t.Fatalf("zstd frame header %+v, %v: want content checksum and size", h, err)
	}
	s := decompress(t, compressed)
	if h.FrameContentSize != uint64(len(s)) {
		t.Errorf("declared content size %d, actual %d", h.FrameContentSize, len(s))
	}

	n := binary.LittleEndian.Uint64(s[:8])
	if n%8 != 0 || n > uint64(len(s)-8) {
		t.Fatalf("header length %d (stream %d bytes): want a multiple of 8 within the stream", n, len(s))
	}
	header, data := s[8:8+n], s[8+n:]
	trimmed := bytes.TrimRight(header, " ")
	if header[0] != '{' || trimmed[len(trimmed)-1] != '}' || len(header)-len(trimmed) >= 8 {
		t.Fatalf("header %q: want a JSON object padded with fewer than 8 spaces", header)
	}
	if !bytes.HasPrefix(header, []byte(`{"__metadata__":{`)) {
		t.Errorf("header does not start with __metadata__: %q", header[:40])
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if err := json.Unmarshal(top["__metadata__"], &meta); err != nil {
		t.Fatal(err)
	}
	delete(top, "__metadata__")
	if meta["privtrain.format"] != "privtrain-checkpoint/1" {
		t.Errorf("format marker = %q", meta["privtrain.format"])
	}
	for k, v := range f.Metadata {
		if meta[k] != v {
			t.Errorf("metadata %q = %q, want %q", k, meta[k], v)
		}
	}
	if len(meta) != len(f.Metadata)+2 {
		t.Errorf("metadata has %d keys, want %d", len(meta), len(f.Metadata)+2)
	}

	type info struct {
		name        string
		Dtype       string
		Shape       []int
		DataOffsets [2]int `json:"data_offsets"`
	}
	var infos []info
	for name, raw := range top {
		var in info
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		in.name = name
		infos = append(infos, in)
	}
	if len(infos) != len(want) {
		t.Fatalf("%d tensors, want %d", len(infos), len(want))
	}
	slices.SortFunc(infos, func(a, b info) int {
		return a.DataOffsets[0]*1000 + a.DataOffsets[1] - b.DataOffsets[0]*1000 - b.DataOffsets[1]
	})
	next := 0
	for i, in := range infos {
		w := want[in.name]
		if in.Dtype != w.dtype || !slices.Equal(in.Shape, w.shape) {
			t.Errorf("%q: dtype %s shape %v, want %s %v", in.name, in.Dtype, in.Shape, w.dtype, w.shape)
		}
		if in.DataOffsets[0] != next {
			t.Errorf("%q starts at %d, want %d", in.name, in.DataOffsets[0], next)
		}
		next = in.DataOffsets[1]
		if got := data[in.DataOffsets[0]:in.DataOffsets[1]]; !bytes.Equal(got, w.data) {
			t.Errorf("%q: data % x, want % x", in.name, got, w.data)
		}
		if i > 0 {
			// Writer order: descending dtype, then ascending name; empty tensors share
			// offsets with their neighbour, so compare by position in the header order.
			prev := infos[i-1]
			pi, ci := slices.Index(safetensorsOrder, prev.Dtype), slices.Index(safetensorsOrder, in.Dtype)
			if pi < ci || (pi == ci && prev.name > in.name) {
				t.Errorf("%q (%s) is stored after %q (%s)", in.name, in.Dtype, prev.name, prev.Dtype)
			}
		}
	}
	if next != len(data) {
		t.Errorf("tensors end at %d, data section has %d bytes", next, len(data))
	}

	// The checksum: SHA-256 of the stream with its 64 digits replaced by '0'.
	key := []byte(`"privtrain.sha256":"`)
	at := bytes.Index(s, key) + len(key)
	digits := string(s[at : at+64])
	zeroed := slices.Clone(s)
	copy(zeroed[at:], strings.Repeat("0", 64))
	if sum := sha256.Sum256(zeroed); hex.EncodeToString(sum[:]) != digits || meta["privtrain.sha256"] != digits {
		t.Errorf("checksum %s, SHA-256 of the zeroed stream %x", digits, sum)
	}

	// And back through Decode.
	g, err := tensorfile.Decode(bytes.NewReader(compressed))
	if err != nil {
		t.Fatal(err)
	}
	assertSameFile(t, g, f)
}

// assertSameFile compares two files tensor by tensor; a nil and an empty shape are
// both a scalar.
func assertSameFile(t testing.TB, got, want *tensorfile.File) {
	t.Helper()
	if len(got.Tensors) != len(want.Tensors) {
		t.Errorf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
	}
	for name, w := range want.Tensors {
		g, ok := got.Tensors[name]
		if !ok {
			t.Errorf("tensor %q missing", name)
			continue
		}
		if g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("tensor %q = %v %v % x, want %v %v % x", name, g.DType, g.Shape, g.Data, w.DType, w.Shape, w.Data)
		}
	}
	if len(got.Metadata) != len(want.Metadata) {
		t.Errorf("metadata %v, want %v", got.Metadata, want.Metadata)
	}
	for k, v := range want.Metadata {
		if got.Metadata[k] != v {
			t.Errorf("metadata %q = %q, want %q", k, got.Metadata[k], v)
		}
	}
}

func TestAccessors(t *testing.T) {
	f64 := []float64{1.5, -2, math.Inf(1), math.SmallestNonzeroFloat64}
	f32 := []float32{1.5, -2, float32(math.Inf(-1)), math.MaxFloat32}
	i64 := []int64{math.MinInt64, -1, 0, math.MaxInt64}
	f := &tensorfile.File{Tensors: map[string]tensorfile.Tensor{
		"f64": tensorfile.F64([]int{2, 2}, f64),
		"f32": tensorfile.F32([]int{4}, f32),
		"i64": tensorfile.I64([]int{4, 1}, i64),
		"u8":  tensorfile.U8([]int{2}, []byte{0, 255}),
	}}
	g, err := tensorfile.Decode(bytes.NewReader(encode(t, f)))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := g.Tensors["f64"].Float64s(); err != nil || !slices.Equal(v, f64) {
		t.Errorf("Float64s = %v, %v", v, err)
	}
	if v, err := g.Tensors["f32"].Float32s(); err != nil || !slices.Equal(v, f32) {
		t.Errorf("Float32s = %v, %v", v, err)
	}
	if v, err := g.Tensors["i64"].Int64s(); err != nil || !slices.Equal(v, i64) {
		t.Errorf("Int64s = %v, %v", v, err)
	}
	if v, err := g.Tensors["u8"].Uint8s(); err != nil || !slices.Equal(v, []byte{0, 255}) {
		t.Errorf("Uint8s = %v, %v", v, err)
	}
	if _, err := g.Tensors["f32"].Float64s(); err == nil || !strings.Contains(err.Error(), "F32, not F64") {
		t.Errorf("Float64s of F32: %v", err)
	}
	bad := tensorfile.Tensor{DType: tensorfile.Float64, Shape: []int{2}, Data: make([]byte, 9)}
	if _, err := bad.Float64s(); err == nil {
		t.Error("Float64s of a tensor with 9 bytes for 2 elements succeeded")
	}
	// Appending to one decoded tensor must not overwrite its neighbour in the buffer.
	d := g.Tensors["u8"].Data
	_ = append(d, 9, 9, 9, 9, 9, 9, 9, 9)
	for name, tt := range f.Tensors {
		if !bytes.Equal(g.Tensors[name].Data, tt.Data) {
			t.Errorf("tensor %q changed after appending to u8", name)
		}
	}
}

func TestEncodeRejects(t *testing.T) {
	ok := tensorfile.F64([]int{1}, []float64{1})
	tests := []struct {
		name string
		file *tensorfile.File
		want string
	}{
		{"nil", nil, "nil File"},
		{"short data", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": tensorfile.F64([]int{2, 2}, []float64{1, 2, 3})}}, "needs 32 data bytes, has 24"},
		{"scalar with two", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": tensorfile.F64(nil, []float64{1, 2})}}, "needs 8 data bytes"},
		{"negative dim", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": {DType: tensorfile.Uint8, Shape: []int{-1}}}}, "invalid shape"},
		{"bad dtype", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": {DType: 99, Shape: []int{1}, Data: []byte{1}}}}, "invalid dtype"},
		{"zero dtype", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": {Shape: []int{1}, Data: []byte{1}}}}, "invalid dtype"},
		{"overflow", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": {DType: tensorfile.Float64, Shape: []int{1 << 40, 1 << 40}}}}, "invalid shape"},
		{"empty name", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"": ok}}, "empty tensor name"},
		{"metadata name", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"__metadata__": ok}}, "reserved"},
		{"bad utf8 name", &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"\xff": ok}}, "UTF-8"},
		{"reserved key", &tensorfile.File{Metadata: map[string]string{"privtrain.format": "x"}}, "reserved"},
		{"reserved sum", &tensorfile.File{Metadata: map[string]string{"privtrain.sha256": "x"}}, "reserved"},
		{"bad utf8 value", &tensorfile.File{Metadata: map[string]string{"k": "\xfe"}}, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := tensorfile.Encode(&buf, tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Encode error %v, want one mentioning %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("Encode wrote %d bytes for an invalid file", buf.Len())
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	g, err := tensorfile.Decode(bytes.NewReader(encode(t, &tensorfile.File{})))
	if err != nil {
		t.Fatal(err)
	}
	if g.Tensors == nil || g.Metadata == nil || len(g.Tensors)+len(g.Metadata) != 0 {
		t.Errorf("decoded empty file = %+v", g)
	}
}

// smallCheckpoint is the checkpoint the corruption tests damage.
func smallCheckpoint() *tensorfile.File {
	return &tensorfile.File{
		Tensors: map[string]tensorfile.Tensor{
			"dense.w": tensorfile.F32([]int{3, 4}, []float32{.1, .2, .3, .4, .5, .6, .7, .8, .9, 1, 1.1, 1.2}),
			"dense.b": tensorfile.F32([]int{4}, []float32{0, 0, 0, 1}),
			"step":    tensorfile.I64(nil, []int64{1234}),
			"adam.m":  tensorfile.F64([]int{4}, []float64{1e-3, -2e-3, 3e-3, 0}),
		},
		Metadata: map[string]string{"model": "logreg", "epoch": "2"},
	}
}

// isOurError reports whether err matches one of the package's sentinels.
func isOurError(err error) bool {
	for _, s := range []error{tensorfile.ErrCorrupt, tensorfile.ErrNotCheckpoint, tensorfile.ErrUnsupportedVersion, tensorfile.ErrTooLarge} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// TestEveryByteFlipDetected flips bits of every byte of a small checkpoint; each
// damaged file must fail with one of the package's errors. (Without the trailer some
// flips in the zstd window size and entropy tables decode to the identical content.)
func TestEveryByteFlipDetected(t *testing.T) {
	good := encode(t, smallCheckpoint())
	for i := range good {
		for _, mask := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF} {
			checkFlip(t, good, i, mask)
		}
	}
}

// checkFlip decodes good with byte i XORed by mask: the damage must fail with one of the
// package's errors.
func checkFlip(t *testing.T, good []byte, i int, mask byte) {
	t.Helper()
	bad := slices.Clone(good)
	bad[i] ^= mask
	_, err := tensorfile.Decode(bytes.NewReader(bad))
	if err == nil {
		t.Errorf("byte %d of %d ^ %#x: damage not detected", i, len(good), mask)
	} else if !isOurError(err) {
		t.Errorf("byte %d ^ %#x: error %v matches no sentinel", i, mask, err)
	}
}

// TestSampledByteFlipsLarge damages a checkpoint spanning several zstd blocks.
func TestSampledByteFlipsLarge(t *testing.T) {
	v := make([]float64, 60000)
	for i := range v {
		v[i] = math.Sin(float64(i)) * float64(i%97)
	}
	good := encode(t, &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": tensorfile.F64([]int{300, 200}, v)}})
	stride := max(1, len(good)/400)
	for i := 0; i < len(good); i += stride {
		for _, mask := range []byte{0x01, 0x55} {
			checkFlip(t, good, i, mask)
		}
	}
}

func TestEveryTruncationDetected(t *testing.T) {
	good := encode(t, smallCheckpoint())
	for n := range len(good) {
		_, err := tensorfile.Decode(bytes.NewReader(good[:n]))
		if !errors.Is(err, tensorfile.ErrTruncated) || !errors.Is(err, tensorfile.ErrCorrupt) {
			t.Errorf("first %d of %d bytes: error %v, want ErrTruncated", n, len(good), err)
		}
	}
}

// handWritten builds a checkpoint following the format description in doc.go, without
// this package's writer: tensors and metadata in a deliberately different order, extra
// padding, and the checksum computed as documented.
func handWritten(t testing.TB, format string, crc bool) []byte {
	t.Helper()
	header := `{"b":{"data_offsets":[8,12],"shape":[],"dtype":"F32"},` +
		`"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},` +
		`"__metadata__":{"user":"x","privtrain.sha256":"` + strings.Repeat("0", 64) + `","privtrain.format":"` + format + `"}}`
	header += strings.Repeat(" ", 8-len(header)%8+8)
	s := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	s = append(s, header...)
	s = append(s, hexBytes("000000000000F03F")...) // a = 1.0
	s = append(s, hexBytes("0000C03F")...)         // b = 1.5
	sum := sha256.Sum256(s)
	at := bytes.Index(s, []byte(strings.Repeat("0", 64)))
	copy(s[at:], hex.EncodeToString(sum[:]))
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(crc))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(s, nil)
	// The trailer: skippable frame 0x184D2A5E, payload "ptsha256" and SHA-256(frame).
	frameSum := sha256.Sum256(frame)
	out := append(frame, hexBytes("5E2A4D18 28000000")...)
	out = append(out, "ptsha256"...)
	return append(out, frameSum[:]...)
}

func TestDecodeHandWritten(t *testing.T) {
	g, err := tensorfile.Decode(bytes.NewReader(handWritten(t, "privtrain-checkpoint/1", true)))
	if err != nil {
		t.Fatal(err)
	}
	a, errA := g.Tensors["a"].Float64s()
	b, errB := g.Tensors["b"].Float32s()
	if errA != nil || errB != nil || !slices.Equal(a, []float64{1}) || !slices.Equal(b, []float32{1.5}) || len(g.Tensors["b"].Shape) != 0 {
		t.Errorf("a = %v (%v), b = %v (%v)", a, errA, b, errB)
	}
	if len(g.Metadata) != 1 || g.Metadata["user"] != "x" {
		t.Errorf("metadata = %v, want only the user's entry", g.Metadata)
	}
}

func TestDecodeRejectsForeign(t *testing.T) {
	compress := func(b []byte) []byte {
		enc, _ := zstd.NewWriter(nil)
		return enc.EncodeAll(b, nil)
	}
	// A safetensors file as huggingface/safetensors writes it (reference bytes from its
	// test_serialization): {"attn.0": F32 [1,2,3]}.
	plain := append(binary.LittleEndian.AppendUint64(nil, 64),
		`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`...)
	plain = append(plain, make([]byte, 24)...)
	good := encode(t, smallCheckpoint())

	tests := []struct {
		name  string
		input []byte
		want  error
		say   string
	}{
		{"empty", nil, tensorfile.ErrTruncated, "0 bytes"},
		{"text", []byte("hello, world\n"), tensorfile.ErrNotCheckpoint, "not a zstd stream"},
		{"gzip", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3}, tensorfile.ErrNotCheckpoint, "not a zstd stream"},
		{"plain safetensors", plain, tensorfile.ErrNotCheckpoint, "uncompressed safetensors"},
		{"zstd of text", compress([]byte(strings.Repeat("some log line\n", 100))), tensorfile.ErrNotCheckpoint, "safetensors"},
		{"zstd of safetensors", compress(plain), tensorfile.ErrNotCheckpoint, "without the privtrain.format marker"},
		{"zstd of nothing", compress(nil), tensorfile.ErrNotCheckpoint, ""},
		{"skippable frame", append([]byte{0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0}, good...), tensorfile.ErrNotCheckpoint, "skippable"},
		{"future version", handWritten(t, "privtrain-checkpoint/3", true), tensorfile.ErrUnsupportedVersion, `"privtrain-checkpoint/3"`},
		{"other format", handWritten(t, "something-else/1", true), tensorfile.ErrNotCheckpoint, "something-else"},
		{"no zstd checksum", handWritten(t, "privtrain-checkpoint/1", false), tensorfile.ErrCorrupt, "no content checksum"},
		{"trailing bytes", append(slices.Clone(good), 0), tensorfile.ErrCorrupt, "1 bytes follow"},
		{"two checkpoints", append(slices.Clone(good), good...), tensorfile.ErrCorrupt, "follow the trailer"},
		{"no trailer", good[:len(good)-48], tensorfile.ErrTruncated, "0 bytes into the 48-byte trailer"},
		{"foreign trailer", append(slices.Clone(good[:len(good)-48]), 0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0), tensorfile.ErrCorrupt, "no valid trailer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tensorfile.Decode(bytes.NewReader(tt.input))
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.say) {
				t.Errorf("error %v, want %v mentioning %q", err, tt.want, tt.say)
			}
			if !strings.HasPrefix(fmt.Sprint(err), "checkpoint: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestDecodeSizeLimits(t *testing.T) {
	v := make([]float64, 1<<17) // 1 MiB of zeros compresses to almost nothing
	big := encode(t, &tensorfile.File{Tensors: map[string]tensorfile.Tensor{"w": tensorfile.F64([]int{len(v)}, v)}})
	if len(big) > 1<<12 {
		t.Fatalf("1 MiB of zeros compressed to %d bytes; the test wants a bomb", len(big))
	}
	if _, err := tensorfile.Decode(bytes.NewReader(big), tensorfile.WithMaxSize(1<<19)); !errors.Is(err, tensorfile.ErrTooLarge) {
		t.Errorf("1 MiB checkpoint with a 512 KiB limit: %v, want ErrTooLarge", err)
	}
	if _, err := tensorfile.Decode(bytes.NewReader(big), tensorfile.WithMaxSize(1<<21)); err != nil {
		t.Errorf("1 MiB checkpoint with a 2 MiB limit: %v", err)
	}
	if _, err := tensorfile.Decode(bytes.NewReader(big), tensorfile.WithMaxSize(0)); err == nil {
		t.Error("WithMaxSize(0) accepted")
	}

	// A frame that declares 2^40 bytes of content but holds one tiny raw block: refused
	// before the decoder allocates anything of that size.
	lie := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe4} // FCS 8 bytes, single segment, checksum
	lie = binary.LittleEndian.AppendUint64(lie, 1<<40)
	lie = append(lie, 0x09, 0, 0, 'x', 0, 0, 0, 0) // last raw block of 1 byte, checksum
	if _, err := tensorfile.Decode(bytes.NewReader(lie)); !errors.Is(err, tensorfile.ErrCorrupt) || !strings.Contains(err.Error(), "declares") {
		t.Errorf("lying content size: %v", err)
	}
	// The same lie within the blocks' capacity but above the limit.
	rle := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xa4}                // FCS 4 bytes, single segment, checksum
	rle = binary.LittleEndian.AppendUint32(rle, 40*maxBlock()) // 40 RLE blocks of 128 KiB
	for i := range 40 {
		last := uint32(0)
		if i == 39 {
			last = 1
		}
		bh := last | 1<<1 | uint32(maxBlock())<<3
		rle = append(rle, byte(bh), byte(bh>>8), byte(bh>>16), 0)
	}
	rle = append(rle, 0, 0, 0, 0)
	if _, err := tensorfile.Decode(bytes.NewReader(rle), tensorfile.WithMaxSize(1<<20)); !errors.Is(err, tensorfile.ErrTooLarge) {
		t.Errorf("5 MiB RLE bomb with a 1 MiB limit: %v, want ErrTooLarge", err)
	}
}

func maxBlock() uint32 { return 128 << 10 }

// TestEncodeDeterministic: map iteration order and encoder concurrency must not leak
// into the bytes, so that identical runs give identical checkpoint files.
func TestEncodeDeterministic(t *testing.T) {
	v := make([]float64, 100_000) // several zstd blocks
	for i := range v {
		v[i] = math.Sqrt(float64(i))
	}
	files := []*tensorfile.File{smallCheckpoint(), {Tensors: map[string]tensorfile.Tensor{"a": tensorfile.F64([]int{len(v)}, v), "b": tensorfile.F64([]int{len(v)}, v)}}}
	for i, f := range files {
		first := encode(t, f)
		for range 5 {
			if again := encode(t, f); !bytes.Equal(again, first) {
				t.Fatalf("file %d: two encodings differ", i)
			}
		}
	}
}
