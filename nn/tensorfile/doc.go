// Package tensorfile is the container of privtrain's checkpoints: named tensors and
// string metadata in a compressed, checksummed file that any safetensors reader can open
// after `zstd -d`, written atomically, optionally signed with a key (HMAC-SHA256), and
// read with bounded memory whatever the input claims. It knows nothing of what the
// tensors mean: package nn/checkpoint lays a training run's state out in it. It also
// writes and reads plain safetensors streams (EncodeSafetensors, DecodeSafetensors).
//
// Write a checkpoint atomically and read it back:
//
//	f := &tensorfile.File{
//		Tensors: map[string]tensorfile.Tensor{
//			"dense0.w":   tensorfile.F64([]int{784, 10}, weights),
//			"adam.step":  tensorfile.I64(nil, []int64{step}),
//			"noise.rng":  tensorfile.U8([]int{len(rng)}, rng),
//		},
//		Metadata: map[string]string{"model": "logreg"},
//	}
//	err := tensorfile.WriteFile("run.ckpt", f)
//	...
//	g, err := tensorfile.ReadFile("run.ckpt")
//	w, err := g.Tensors["dense0.w"].Float64s()
//
// Reading fails with an error matching ErrNotCheckpoint, ErrUnsupportedVersion,
// ErrCorrupt (of which ErrTruncated and ErrChecksum are kinds) or ErrTooLarge; it never
// panics on any input and never allocates much more than the configured maximum
// size (WithMaxSize, DefaultMaxSize = 4 GiB) however the input lies about its sizes.
//
// # Format (privtrain-checkpoint/1)
//
// A checkpoint file is two zstd frames (RFC 8878) and nothing else: a data frame with
// the content checksum flag set and the content size declared, then a 48-byte
// skippable frame, the trailer, that zstd decompressors ignore:
//
//	data frame   zstd-compressed safetensors stream (below)
//	trailer      5E 2A 4D 18 (magic 0x184D2A5E), 28 00 00 00 (payload size 40),
//	             "ptsha256", SHA-256 of every byte of the data frame (32 bytes)
//
// The content of the data frame is a safetensors byte stream
// (https://github.com/huggingface/safetensors):
//
//	8 bytes  N, the header length, a little-endian uint64; N ≤ 100,000,000
//	N bytes  the header: UTF-8 JSON, padded with spaces to a multiple of 8 bytes
//	rest     the data section: every tensor's elements, little-endian, row-major
//
// The header is one JSON object, written compactly: "__metadata__" first, a map of
// strings to strings with its keys sorted, then one entry per tensor:
//
//	{"__metadata__":{"privtrain.format":"privtrain-checkpoint/1","privtrain.sha256":"…"},
//	 "w":{"dtype":"F64","shape":[2,3],"data_offsets":[0,48]}}
//
// dtype is one of BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32,
// F64, I64, U64; shape is outermost dimension first ([] for a scalar, a 0 for an empty
// tensor); data_offsets are [begin, end) byte offsets into the data section. As
// safetensors' own writer does, tensors are laid out by dtype from the end of that
// list to its start (U64 first, BOOL last), then by name, contiguously from offset 0
// to the end of the stream. The reader enforces the safetensors rules: header length
// limit, a header starting with '{', only space padding after it, no duplicate keys
// at any level, strings-only metadata, no unknown fields, dimensions and offsets below
// 2^48, and offsets that tile the data section exactly (no gaps, no overlaps, sizes
// equal to prod(shape)·sizeof(dtype), computed without overflow). It does not require
// the writer's key order or padding.
//
// Two metadata keys are reserved; Encode sets them and Decode checks and removes them:
//
//   - "privtrain.format" is "privtrain-checkpoint/1". Without it the content is
//     ErrNotCheckpoint; another "privtrain-checkpoint/…" is ErrUnsupportedVersion.
//   - "privtrain.sha256" is the SHA-256 of the entire decompressed stream (length
//     prefix, header with its padding, data section) computed with the 64 lowercase
//     hex digits of this value replaced by 64 ASCII '0' characters. The writer hashes
//     the stream with the placeholder in place and then fills in the digits.
//
// # Signed checkpoints (privtrain-checkpoint/2)
//
// WriteFileWithKey (and so checkpoint.SaveWithKey) writes the same container with
// "privtrain.format" set to "privtrain-checkpoint/2" (FormatSigned) and two more metadata
// values, each 64 lowercase hex digits written plainly:
//
//   - "nn.mac.header": HMAC-SHA256 under the key of "privtrain-checkpoint-mac/2
//     header\n" followed by the length prefix and the header, with the 64 digits of
//     "privtrain.sha256", "nn.mac" and "nn.mac.header" each replaced by '0' (the head).
//     The header lays out every tensor, so this MAC commits to every size: a reader with
//     the key checks it before it allocates anything for the data.
//   - "nn.mac": HMAC-SHA256 under the key of "privtrain-checkpoint-mac/2 stream\n", the
//     same head, then the data section as stored: checked as the data is decompressed,
//     in the file's own order, before the content is handed out.
//
// The writer computes both MACs with the three values as zeros, writes them in, then
// computes "privtrain.sha256" (which so covers the MACs). Decode removes "nn.mac.header"
// from the metadata it returns and keeps "nn.mac" (the mark of a signed file).
//
// Files signed before format 2 are format 1 with "nn.mac" alone: an HMAC-SHA256 of the
// metadata and then of the tensors in name order (length-prefixed), while the file stores
// them by dtype, then name. A keyed read (WithKey) still accepts them: it checks that
// MAC by decompressing the tensors in name order without keeping them (one pass per
// dtype at most; more is refused) before allocating them, and refuses such files above
// 1 GiB (ErrTooLarge), where that pass alone costs about a second of CPU per GiB.
//
// # Integrity
//
// Three checks cover every byte, each for a reason. The trailer's SHA-256 covers the
// file as stored, so any change of any byte of the data frame is ErrChecksum, even a
// change zstd cannot see because it leaves the decompressed output the same (zstd has
// such redundant bits: the window size, unused entropy-table entries). The zstd content
// checksum (XXH64) identifies damage inside the frame as it is decompressed. The
// "privtrain.sha256" digest covers the decompressed stream, so it still protects the
// tensors, shapes, names and metadata of a checkpoint that was decompressed with
// `zstd -d` (which drops the trailer) or written by another program. Walking the frame's
// block headers before decompressing tells a truncated file (ErrTruncated) from a
// damaged one, bounds the memory a lying content size can claim, and rejects bytes
// after the trailer. The decoder then streams: it reads the safetensors header first
// and allocates the data only once the size that header describes agrees with the
// declared content size, the blocks and the size limit, so a zstd bomb costs at most
// the size a plausible checkpoint header claims, never more (a keyed read also
// refuses a header without a MAC, or with a MAC that does not verify, before
// allocating the data).
//
// # Inspecting a checkpoint
//
//	zstd -d -o run.safetensors run.ckpt
//	python3 -c 'from safetensors.numpy import load_file; print(load_file("run.safetensors"))'
//
// To write one from another language: write the stream above with 64 '0' digits as
// the checksum, hash it, put the hex digest in place of the zeros, compress it as one
// zstd frame with the content checksum on, and append the trailer.
package tensorfile
