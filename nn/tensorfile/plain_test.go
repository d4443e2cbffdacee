package tensorfile

import (
	"bytes"
	"errors"
	"testing"
)

// TestEncodeSafetensorsMatchesReference: the plain writer produces the reference
// implementation's files byte for byte (header, padding and data).
func TestEncodeSafetensorsMatchesReference(t *testing.T) {
	six := []float32{0, 1, 2, 3, 4, 5}
	for _, tc := range []struct {
		name     string
		tensors  map[string]Tensor
		metadata map[string]string
		want     []byte
	}{
		{"attn.0", map[string]Tensor{"attn.0": F32([]int{1, 2, 3}, six)}, nil, refAttn},
		{"attn0 padded", map[string]Tensor{"attn0": F32([]int{1, 1, 2, 3}, six)}, nil, refAttnPadded},
		{"empty", map[string]Tensor{}, nil, refEmpty},
		{"metadata only", nil, map[string]string{"framework": "pt"}, refMetadata},
	} {
		var buf bytes.Buffer
		if err := EncodeSafetensors(&buf, tc.tensors, tc.metadata); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(buf.Bytes(), tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, buf.Bytes(), tc.want)
		}
		f, err := DecodeSafetensors(buf.Bytes())
		if err != nil || len(f.Tensors) != len(tc.tensors) || len(f.Metadata) != len(tc.metadata) {
			t.Errorf("%s: decoded %+v, %v", tc.name, f, err)
		}
	}
}

func TestEncodeSafetensorsRefuses(t *testing.T) {
	for name, tensors := range map[string]map[string]Tensor{
		"short data":    {"w": {DType: Float32, Shape: []int{2}, Data: make([]byte, 4)}},
		"reserved name": {"__metadata__": F32([]int{1}, []float32{1})},
		"empty name":    {"": F32([]int{1}, []float32{1})},
	} {
		var buf bytes.Buffer
		if err := EncodeSafetensors(&buf, tensors, nil); err == nil || buf.Len() != 0 {
			t.Errorf("%s: %v, %d bytes written", name, err, buf.Len())
		}
	}
	if _, err := DecodeSafetensors(refAttn[:len(refAttn)-1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated stream: %v", err)
	}
}

// FuzzDecodeSafetensors: the plain reader never panics, and what it accepts it writes
// back to a stream it accepts again with the same tensors.
func FuzzDecodeSafetensors(f *testing.F) {
	for _, s := range [][]byte{refAttn, refAttnPadded, refEmpty, refMetadata} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := DecodeSafetensors(b)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := EncodeSafetensors(&buf, g.Tensors, g.Metadata); err != nil {
			t.Fatalf("re-encoding an accepted stream: %v", err)
		}
		h, err := DecodeSafetensors(buf.Bytes())
		if err != nil || len(h.Tensors) != len(g.Tensors) {
			t.Fatalf("re-decoding: %v", err)
		}
		for k, v := range g.Tensors {
			if !bytes.Equal(h.Tensors[k].Data, v.Data) {
				t.Fatalf("tensor %q changed", k)
			}
		}
	})
}
