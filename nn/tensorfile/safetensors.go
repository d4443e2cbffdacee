package tensorfile

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the safetensors layout, from its reference implementation and JSON schema.
const (
	maxHeaderSize = 100_000_000 // MAX_HEADER_SIZE of huggingface/safetensors
	maxSizeT      = 1<<48 - 1   // "size_t" of docs/safetensors.schema.json: 48-bit naturals
	metadataKey   = "__metadata__"
	headerAlign   = 8 // the writer pads the header with spaces to this multiple
)

// layoutEntry is one tensor's record in a safetensors header; begin and end are
// offsets into the data section.
type layoutEntry struct {
	name       string
	dtype      DType
	shape      []int
	begin, end uint64
}

// layout is a parsed and validated safetensors byte stream.
type layout struct {
	header   []byte            // the N bytes of JSON header, padding included
	data     []byte            // the data section
	entries  []layoutEntry     // in data order
	metadata map[string]string // nil if the header has no __metadata__
	// checksumAt is the offset in the stream of the value of the checksum key in
	// __metadata__ when it is written as a plain string, else -1; macAt and headerMACAt
	// are those of the MACs (MACKey, keyHeaderMAC).
	checksumAt, macAt, headerMACAt int
}

// at returns the field of l that records where the value of key is in the stream, for
// the keys whose values are placeholders while the stream is hashed, else nil.
func (l *layout) at(key string) *int {
	switch key {
	case checksumKey:
		return &l.checksumAt
	case MACKey:
		return &l.macAt
	case keyHeaderMAC:
		return &l.headerMACAt
	}
	return nil
}

// writeOrder sorts tensors as the safetensors writer does: descending dtype, then name.
func writeOrder(a, b layoutEntry) int {
	if a.dtype != b.dtype {
		return int(b.dtype) - int(a.dtype)
	}
	return strings.Compare(a.name, b.name)
}

// encodeHeader returns the safetensors header for the entries (in the given order,
// which must be the data order) and metadata: compact JSON with __metadata__ first and
// its keys sorted, padded with spaces to a multiple of 8 bytes. It also returns the
// offsets in the header of the values of the checksum and MAC keys that metadata holds.
func encodeHeader(metadata map[string]string, entries []layoutEntry) ([]byte, map[string]int, error) {
	var buf bytes.Buffer
	at := map[string]int{}
	buf.WriteByte('{')
	if metadata != nil {
		appendJSONString(&buf, metadataKey)
		buf.WriteString(":{")
		for i, k := range slices.Sorted(mapKeys(metadata)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			appendJSONString(&buf, k)
			buf.WriteByte(':')
			if k == checksumKey || k == MACKey || k == keyHeaderMAC {
				at[k] = buf.Len() + 1 // past the opening quote
			}
			appendJSONString(&buf, metadata[k])
		}
		buf.WriteByte('}')
	}
	for i, e := range entries {
		if i > 0 || metadata != nil {
			buf.WriteByte(',')
		}
		appendJSONString(&buf, e.name)
		buf.WriteString(`:{"dtype":"`)
		buf.WriteString(e.dtype.String())
		buf.WriteString(`","shape":[`)
		for j, d := range e.shape {
			if j > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&buf, `],"data_offsets":[%d,%d]}`, e.begin, e.end)
	}
	buf.WriteByte('}')
	for buf.Len()%headerAlign != 0 {
		buf.WriteByte(' ')
	}
	if buf.Len() > maxHeaderSize {
		return nil, nil, fmt.Errorf("%w: header of %d bytes exceeds the safetensors limit of %d bytes",
			ErrTooLarge, buf.Len(), maxHeaderSize)
	}
	return buf.Bytes(), at, nil
}

func appendJSONString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // cannot fail for a string written to a bytes.Buffer
	buf.Truncate(buf.Len() - 1)
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// parseLayout parses a safetensors byte stream and validates it as the reference
// implementation does, and more strictly where the format's documents leave room:
//   - 8-byte little-endian header length N ≤ 100,000,000, with 8+N bytes present;
//   - the header is UTF-8 JSON starting with '{', followed only by space padding;
//   - no duplicate keys at any level ("Duplicate keys are disallowed");
//   - __metadata__, if present, maps strings to strings;
//   - every tensor has exactly dtype, shape and data_offsets, a known dtype, and
//     naturals of at most 48 bits for dimensions and offsets;
//   - sorted by offsets, the tensors tile the data section exactly: the first starts
//     at 0, each starts where the previous ends, each holds prod(shape)·size bytes
//     (computed without overflow), and the last ends at the end of the stream.
func parseLayout(stream []byte) (*layout, error) {
	l, err := parseHeader(stream)
	if err != nil {
		return nil, err
	}
	if err := validateOffsets(l); err != nil {
		return nil, err
	}
	return l, nil
}

// parseHeader parses the length prefix and the header of a safetensors stream, which
// may end right after the header: everything parseLayout checks but the tiling of
// the data section, which may not have been read yet.
func parseHeader(stream []byte) (*layout, error) {
	if len(stream) < 8 {
		return nil, fmt.Errorf("%d bytes are too few for the 8-byte header length", len(stream))
	}
	n := binary.LittleEndian.Uint64(stream)
	if n > maxHeaderSize {
		return nil, fmt.Errorf("header length %d exceeds the safetensors limit of %d bytes", n, maxHeaderSize)
	}
	if n > uint64(len(stream)-8) {
		return nil, fmt.Errorf("header length %d exceeds the %d bytes that follow it", n, len(stream)-8)
	}
	l := &layout{header: stream[8 : 8+n], data: stream[8+n:], checksumAt: -1, macAt: -1, headerMACAt: -1}
	if !utf8.Valid(l.header) {
		return nil, errors.New("header is not valid UTF-8")
	}
	if len(l.header) == 0 || l.header[0] != '{' {
		return nil, errors.New("header does not start with '{'")
	}
	p := headerParser{src: l.header, dec: json.NewDecoder(bytes.NewReader(l.header))}
	p.dec.UseNumber()
	if err := p.parse(l); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if rest := l.header[p.dec.InputOffset():]; len(bytes.TrimLeft(rest, " ")) != 0 {
		return nil, errors.New("header: non-space bytes after the JSON object")
	}
	return l, nil
}

// validateOffsets sorts l.entries into data order and checks that they tile l.data.
func validateOffsets(l *layout) error {
	next, err := dataExtent(l)
	if err != nil {
		return err
	}
	if next != uint64(len(l.data)) {
		return fmt.Errorf("tensors cover %d bytes of a %d-byte data section", next, len(l.data))
	}
	return nil
}

// dataExtent sorts l.entries into data order, checks that they tile a data section
// from offset 0 without gaps or overlaps, and returns that section's size: what the
// header claims, before any of the data is read.
func dataExtent(l *layout) (uint64, error) {
	slices.SortStableFunc(l.entries, func(a, b layoutEntry) int {
		if a.begin != b.begin {
			return cmp.Compare(a.begin, b.begin)
		}
		return cmp.Compare(a.end, b.end)
	})
	var next uint64
	for _, e := range l.entries {
		if e.begin != next || e.end < e.begin {
			return 0, fmt.Errorf("tensor %q: data_offsets [%d,%d] do not continue at offset %d", e.name, e.begin, e.end, next)
		}
		size := uint64(e.dtype.Size())
		for _, d := range e.shape {
			hi, lo := bits.Mul64(size, uint64(d))
			if hi != 0 {
				return 0, fmt.Errorf("tensor %q: shape %v overflows", e.name, e.shape)
			}
			size = lo
		}
		if e.end-e.begin != size {
			return 0, fmt.Errorf("tensor %q: data_offsets [%d,%d] hold %d bytes, shape %v of %v needs %d",
				e.name, e.begin, e.end, e.end-e.begin, e.shape, e.dtype, size)
		}
		next = e.end
	}
	return next, nil
}

// headerParser reads the header JSON token by token, so that duplicate keys, unknown
// fields and values of the wrong type are seen rather than silently resolved.
type headerParser struct {
	src []byte // the header bytes dec reads
	dec *json.Decoder
}

func (p *headerParser) parse(l *layout) error {
	if err := p.delim('{'); err != nil {
		return err
	}
	seen := make(map[string]bool)
	for p.dec.More() {
		key, err := p.str("a key")
		if err != nil {
			return err
		}
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if key == metadataKey {
			if l.metadata, err = p.metadata(l); err != nil {
				return fmt.Errorf("%s: %w", metadataKey, err)
			}
			continue
		}
		e, err := p.tensor(key)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", key, err)
		}
		l.entries = append(l.entries, e)
	}
	return p.delim('}')
}

func (p *headerParser) metadata(l *layout) (map[string]string, error) {
	if err := p.delim('{'); err != nil {
		return nil, err
	}
	m := make(map[string]string)
	for p.dec.More() {
		k, err := p.str("a key")
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		v, err := p.str("a string value")
		if err != nil {
			return nil, fmt.Errorf("%q: %w", k, err)
		}
		m[k] = v
		if at := l.at(k); at != nil {
			// The token just read ends at InputOffset; record where its characters start
			// if they are the value itself, unescaped, so the checksum (or MAC) can be
			// recomputed over the stream with them replaced (see doc.go).
			end := int(p.dec.InputOffset())
			start := end - len(v) - 2
			if start >= 0 && string(p.src[start:end]) == `"`+v+`"` {
				*at = 8 + start + 1
			}
		}
	}
	return m, p.delim('}')
}

func (p *headerParser) tensor(name string) (layoutEntry, error) {
	e := layoutEntry{name: name}
	if err := p.delim('{'); err != nil {
		return e, err
	}
	seen := make(map[string]bool)
	for p.dec.More() {
		field, err := p.str("a field name")
		if err != nil {
			return e, err
		}
		if seen[field] {
			return e, fmt.Errorf("duplicate field %q", field)
		}
		seen[field] = true
		switch field {
		case "dtype":
			s, err := p.str("a dtype name")
			if err != nil {
				return e, fmt.Errorf("dtype: %w", err)
			}
			var ok bool
			if e.dtype, ok = parseDType(s); !ok {
				return e, fmt.Errorf("unknown dtype %q", s)
			}
		case "shape":
			dims, err := p.naturals()
			if err != nil {
				return e, fmt.Errorf("shape: %w", err)
			}
			e.shape = make([]int, len(dims))
			for i, d := range dims {
				e.shape[i] = int(d) // d ≤ maxSizeT fits an int on 64-bit platforms
				if uint64(e.shape[i]) != d {
					return e, fmt.Errorf("shape: dimension %d does not fit an int", d)
				}
			}
		case "data_offsets":
			offs, err := p.naturals()
			if err != nil {
				return e, fmt.Errorf("data_offsets: %w", err)
			}
			if len(offs) != 2 {
				return e, fmt.Errorf("data_offsets holds %d numbers, not 2", len(offs))
			}
			e.begin, e.end = offs[0], offs[1]
		default:
			return e, fmt.Errorf("unknown field %q", field)
		}
	}
	if err := p.delim('}'); err != nil {
		return e, err
	}
	for _, f := range [...]string{"dtype", "shape", "data_offsets"} {
		if !seen[f] {
			return e, fmt.Errorf("missing field %q", f)
		}
	}
	if e.shape == nil {
		e.shape = []int{}
	}
	return e, nil
}

// naturals reads a JSON array of integers in [0, 2^48).
func (p *headerParser) naturals() ([]uint64, error) {
	if err := p.delim('['); err != nil {
		return nil, err
	}
	var v []uint64
	for p.dec.More() {
		tok, err := p.token()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("expected a number, found %s", describe(tok))
		}
		u, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil || u > maxSizeT {
			return nil, fmt.Errorf("%s is not an integer in [0, 2^48)", num)
		}
		v = append(v, u)
	}
	return v, p.delim(']')
}

func (p *headerParser) str(what string) (string, error) {
	tok, err := p.token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("expected %s, found %s", what, describe(tok))
	}
	return s, nil
}

func (p *headerParser) delim(want json.Delim) error {
	tok, err := p.token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %s", want, describe(tok))
	}
	return nil
}

func (p *headerParser) token() (json.Token, error) {
	tok, err := p.dec.Token()
	if err == io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	return tok, err
}

func describe(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return strconv.Quote(t.String())
	case string:
		return "string " + strconv.Quote(t)
	case json.Number:
		return "number " + t.String()
	case nil:
		return "null"
	default:
		return fmt.Sprint(t)
	}
}
