package tensorfile

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// Byte-exact outputs of huggingface/safetensors' own serializer, copied from the
// tests in safetensors/src/tensor.rs (test_serialization, test_serialization_forced_
// alignement, test_empty). They are the independent reference for the layout.
var (
	// {"attn.0": F32 [1,2,3] = 0,1,2,3,4,5}: a 64-byte header needs no padding.
	refAttn = []byte{64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
		116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
		58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
		101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
		0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64}
	// {"attn0": F32 [1,1,2,3] = 0..5}: a 65-byte header padded with 7 spaces to 72.
	refAttnPadded = []byte{72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
		121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
		91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
		115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
		32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
		160, 64}
	// No tensors: "{}" and six spaces.
	refEmpty = []byte{8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32}
	// No tensors, metadata {"framework": "pt"}.
	refMetadata = []byte{40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
		95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
		116, 34, 125, 125, 32, 32, 32, 32, 32}
)

// TestEncodeHeaderMatchesReference checks that our header writer produces the
// reference implementation's bytes exactly, padding included.
func TestEncodeHeaderMatchesReference(t *testing.T) {
	tests := []struct {
		name     string
		metadata map[string]string
		entries  []layoutEntry
		want     []byte
	}{
		{"attn.0", nil, []layoutEntry{{name: "attn.0", dtype: Float32, shape: []int{1, 2, 3}, begin: 0, end: 24}}, refAttn},
		{"attn0 padded", nil, []layoutEntry{{name: "attn0", dtype: Float32, shape: []int{1, 1, 2, 3}, begin: 0, end: 24}}, refAttnPadded},
		{"empty", nil, nil, refEmpty},
		{"metadata only", map[string]string{"framework": "pt"}, nil, refMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header, _, err := encodeHeader(tt.metadata, tt.entries)
			if err != nil {
				t.Fatal(err)
			}
			n := binary.LittleEndian.Uint64(tt.want)
			if want := tt.want[8 : 8+n]; !bytes.Equal(header, want) {
				t.Errorf("header\n got %q\nwant %q", header, want)
			}
		})
	}
}

// TestParseLayoutReference parses the reference implementation's files.
func TestParseLayoutReference(t *testing.T) {
	for _, stream := range [][]byte{refAttn, refAttnPadded} {
		l, err := parseLayout(stream)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.entries) != 1 || l.entries[0].dtype != Float32 || l.entries[0].end != 24 {
			t.Fatalf("entries = %+v", l.entries)
		}
		e := l.entries[0]
		for i := range 6 {
			got := math.Float32frombits(binary.LittleEndian.Uint32(l.data[e.begin+4*uint64(i):]))
			if got != float32(i) {
				t.Errorf("element %d = %v, want %d", i, got, i)
			}
		}
	}
	l, err := parseLayout(refMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.entries) != 0 || l.metadata["framework"] != "pt" || len(l.metadata) != 1 {
		t.Errorf("got entries %v, metadata %v", l.entries, l.metadata)
	}
	if l, err := parseLayout(refEmpty); err != nil || len(l.entries) != 0 || l.metadata != nil {
		t.Errorf("empty: %+v, %v", l, err)
	}
}

// stream assembles a safetensors stream from a header text and data, unpadded.
func stream(header string, data ...byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestParseLayoutRejects(t *testing.T) {
	eight := make([]byte, 8)
	tests := []struct {
		name   string
		stream []byte
		want   string // a fragment of the error message
	}{
		{"short", []byte{1, 2, 3}, "too few"},
		{"header too large", binary.LittleEndian.AppendUint64(nil, maxHeaderSize+1), "exceeds the safetensors limit"},
		{"header beyond end", binary.LittleEndian.AppendUint64(nil, 100), "exceeds the 0 bytes"},
		{"length 2^64-1", binary.LittleEndian.AppendUint64(nil, math.MaxUint64), "exceeds the safetensors limit"},
		{"empty header", stream(""), "does not start with '{'"},
		{"leading space", stream(` {}`), "does not start with '{'"},
		{"not utf8", stream("{\"\xff\":1}"), "UTF-8"},
		{"not an object", stream(`[]`), "does not start"},
		{"bad json", stream(`{"a":}`), "header"},
		{"unterminated", stream(`{"a":{"dtype":"U8"`), "unexpected EOF"},
		{"trailing garbage", stream(`{}x`), "after the JSON object"},
		{"trailing newline", stream("{}\n"), "after the JSON object"},
		{"two objects", stream(`{}{}`), "after the JSON object"},
		{"duplicate tensor", stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 1, 2), "duplicate key"},
		{"duplicate metadata block", stream(`{"__metadata__":{},"__metadata__":{}}`), "duplicate key"},
		{"duplicate metadata key", stream(`{"__metadata__":{"k":"a","k":"b"}}`), "duplicate key"},
		{"duplicate field", stream(`{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1), "duplicate field"},
		{"metadata number", stream(`{"__metadata__":{"k":1}}`), "expected a string value"},
		{"metadata null", stream(`{"__metadata__":{"k":null}}`), "expected a string value"},
		{"metadata not object", stream(`{"__metadata__":"x"}`), "expected"},
		{"unknown field", stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"offsets":[0,1]}}`, 1), "unknown field"},
		{"missing shape", stream(`{"a":{"dtype":"U8","data_offsets":[0,1]}}`, 1), "missing field \"shape\""},
		{"missing dtype", stream(`{"a":{"shape":[1],"data_offsets":[0,1]}}`, 1), "missing field \"dtype\""},
		{"missing offsets", stream(`{"a":{"dtype":"U8","shape":[1]}}`, 1), "missing field \"data_offsets\""},
		{"unknown dtype", stream(`{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}}`, make([]byte, 16)...), "unknown dtype"},
		{"lowercase dtype", stream(`{"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}}`, 0, 0, 0, 0), "unknown dtype"},
		{"negative dim", stream(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, 1), "not an integer"},
		{"fractional dim", stream(`{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, 1), "not an integer"},
		{"exponent dim", stream(`{"a":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}`, 1), "not an integer"},
		{"dim over 48 bits", stream(`{"a":{"dtype":"U8","shape":[281474976710656],"data_offsets":[0,1]}}`, 1), "not an integer"},
		{"string dim", stream(`{"a":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}`, 1), "expected a number"},
		{"one offset", stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}}`, 1), "not 2"},
		{"three offsets", stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}}`, 1), "not 2"},
		{"offset not at zero", stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 1, 2), "do not continue at offset 0"},
		{"gap", stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, 1, 2, 3), "do not continue at offset 1"},
		{"overlap", stream(`{"a":{"dtype":"U16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"U16","shape":[1],"data_offsets":[1,3]}}`, 1, 2, 3), "do not continue"},
		{"end before begin", stream(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"c":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}`, 1), "do not continue"},
		{"size mismatch", stream(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 1, 2, 3, 4), "needs 8"},
		{"shape overflow", stream(`{"a":{"dtype":"F64","shape":[281474976710655,281474976710655],"data_offsets":[0,8]}}`, eight...), "overflows"},
		{"data too short", stream(`{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`, eight...), "16 bytes of a 8-byte"},
		{"data too long", stream(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1, 2), "cover 1 bytes of a 2-byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseLayout(tt.stream)
			if err == nil {
				t.Fatal("parseLayout succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// TestParseLayoutAccepts covers what the safetensors format allows beyond what our
// writer produces: any key order, offsets listed out of order, scalars, empty tensors
// sharing an offset, unpadded headers.
func TestParseLayoutAccepts(t *testing.T) {
	s := stream(`{"z":{"data_offsets":[1,3],"shape":[],"dtype":"I16"},"__metadata__":{"b":"2","a":"1"},`+
		`"e1":{"dtype":"F64","shape":[0,5],"data_offsets":[0,0]},"e2":{"dtype":"U8","shape":[3,0],"data_offsets":[0,0]},`+
		`"a":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}}  `, 1, 0x34, 0x12)
	l, err := parseLayout(s)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]layoutEntry{}
	for _, e := range l.entries {
		byName[e.name] = e
	}
	if z := byName["z"]; len(z.shape) != 0 || binary.LittleEndian.Uint16(l.data[z.begin:]) != 0x1234 {
		t.Errorf("scalar z = %+v", z)
	}
	if l.metadata["a"] != "1" || l.metadata["b"] != "2" {
		t.Errorf("metadata = %v", l.metadata)
	}
	if len(byName) != 4 || byName["e1"].end != 0 || byName["a"].end != 1 {
		t.Errorf("entries = %+v", l.entries)
	}
}
