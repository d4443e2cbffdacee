package tensorfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// zstdBomb builds a zstd frame by hand (RFC 8878): a raw block holding head, then RLE
// blocks of zeros up to total bytes of content, which costs 4 bytes per 128 KiB: 1 GiB
// of content is 32 KiB of frame. declared ≥ 0 writes that content size in the header;
// -1 leaves it out, as `zstd` does when compressing a pipe.
func zstdBomb(head []byte, total, declared int64) []byte {
	out := []byte(zstdMagic)
	const window = (22 - 10) << 3 // Window_Descriptor: 4 MiB
	if declared >= 0 {
		out = append(out, 0xC0, window) // FCS_Field_Size 8 bytes, no checksum
		out = binary.LittleEndian.AppendUint64(out, uint64(declared))
	} else {
		out = append(out, 0x00, window)
	}
	block := func(last bool, kind, size int) {
		h := uint32(size)<<3 | uint32(kind)<<1
		if last {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
	}
	rest := total - int64(len(head))
	block(rest == 0, 0, len(head))
	out = append(out, head...)
	for rest > 0 {
		n := min(rest, maxBlockSize)
		rest -= n
		block(rest == 0, 1, int(n))
		out = append(out, 0)
	}
	return out
}

// safetensorsHead is the length prefix and header of a stream holding one U8 tensor of
// n bytes, as a plausible bomb would start, with the reserved metadata of a checkpoint
// (the SHA-256 wrong); mac adds a MAC entry (of the wrong value).
func safetensorsHead(n int64, mac bool) []byte {
	md := `"privtrain.format":"privtrain-checkpoint/1","privtrain.sha256":"` + strings.Repeat("0", 64) + `"`
	if mac {
		md = `"nn.mac":"00",` + md
	}
	h := fmt.Sprintf(`{"__metadata__":{%s},"w":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}`, md, n, n)
	return append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
}

// plainHead is safetensorsHead for a plain safetensors file, without a checkpoint's
// metadata, padded so that the header and n bytes of data fill n+4096 bytes.
func plainHead(n int64) []byte {
	h := fmt.Sprintf(`{"w":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}`, n, n)
	h += strings.Repeat(" ", 4096-8-len(h))
	return append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
}

// honestBomb is a frame whose safetensors header truthfully describes its n bytes of
// zeros: only a MAC, or the lack of one, tells it from a checkpoint.
func honestBomb(n int64, mac bool) []byte {
	head := safetensorsHead(n, mac)
	return zstdBomb(head, int64(len(head))+n, -1)
}

// allocated runs f and returns the bytes it allocated on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecompressionBomb: a frame of a few KiB to 1 MiB that expands to 1 GiB is
// refused, with the right error, having allocated a few MiB: the decoder reads the
// safetensors header first and allocates only what it, the frame's declared size, the
// frame's blocks and the size limit all allow. Before, DecodeAll grew its output to
// the full GiB and beyond (13 GB peak for the 3.5 GB bomb of issue 23).
func TestDecompressionBomb(t *testing.T) {
	const gib = 1 << 30
	const budget = 64 << 20
	tests := []struct {
		name string
		in   []byte
		opts []ReadOption
		want error
	}{
		// head -c 1G /dev/zero | zstd: no declared size, no safetensors header.
		{"zeros, size undeclared", zstdBomb(nil, gib, -1), nil, ErrNotCheckpoint},
		{"zeros, size declared", zstdBomb(nil, gib, gib), nil, ErrNotCheckpoint},
		// A plausible header whose claim disagrees with the frame's declared size.
		{"header claims more than the frame", zstdBomb(safetensorsHead(gib, false), gib/2, gib/2), nil, ErrCorrupt},
		{"header claims more than the blocks", zstdBomb(safetensorsHead(gib, false), gib/2, -1), nil, ErrCorrupt},
		// An honest claim without a checkpoint's reserved metadata.
		{"foreign header", zstdBomb(plainHead(gib), gib+4096, -1), nil, ErrNotCheckpoint},
		// An honest claim above the reader's limit.
		{"honest claim above the limit", zstdBomb(safetensorsHead(gib, false), gib+1024, -1), []ReadOption{WithMaxSize(64 << 20)}, ErrTooLarge},
		// A load with a key refuses a header without a MAC before reading its data.
		{"no MAC with a key", honestBomb(gib, false), []ReadOption{WithKey([]byte("0123456789abcdef"))}, ErrAuthentication},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.in) > 1<<20 {
				t.Fatalf("bomb of %d bytes, want at most 1 MiB", len(tt.in))
			}
			var err error
			got := allocated(func() { _, err = Decode(bytes.NewReader(tt.in), tt.opts...) })
			if !errors.Is(err, tt.want) {
				t.Errorf("Decode error %v, want %v", err, tt.want)
			}
			if got > budget {
				t.Errorf("Decode allocated %d MiB refusing a %d-byte bomb, want < %d MiB", got>>20, len(tt.in), budget>>20)
			}
		})
	}
}

// TestKeyedReadBomb: ReadFile with WithKey, as checkpoint.LoadWithKey calls it (cmd/train
// and cmd/predict with PRIVTRAIN_CHECKPOINT_KEY set), refuses a 1 GiB bomb without a MAC
// with ErrAuthentication and a few MiB of heap.
func TestKeyedReadBomb(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bomb.ckpt")
	const gib = 1 << 30
	if err := os.WriteFile(path, honestBomb(gib, false), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	got := allocated(func() { _, err = ReadFile(path, WithKey([]byte("0123456789abcdef"))) })
	if !errors.Is(err, ErrAuthentication) {
		t.Errorf("keyed ReadFile error %v, want ErrAuthentication", err)
	}
	if got > 64<<20 {
		t.Errorf("keyed ReadFile allocated %d MiB, want < 64", got>>20)
	}
}
