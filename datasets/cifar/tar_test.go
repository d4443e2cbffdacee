package cifar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

// The reader reads what archive/tar writes, in each of its formats: USTAR (a long path
// split into prefix and name), PAX (a path over 255 bytes, an extended header) and GNU
// (a long-name member); directories are not regular; the archive ends with io.EOF.
func TestTarReaderFormats(t *testing.T) {
	long := strings.Repeat("d", 120) + "/" + strings.Repeat("f", 90) + ".bin"
	longer := strings.Repeat("x/", 150) + "data.bin"
	for _, format := range []tar.Format{tar.FormatUSTAR, tar.FormatPAX, tar.FormatGNU} {
		members := []struct {
			name string
			data string
			dir  bool
		}{{"top/", "", true}, {"top/a.bin", "hello", false}, {long, strings.Repeat("z", 1000), false}}
		if format != tar.FormatUSTAR {
			members = append(members, struct {
				name string
				data string
				dir  bool
			}{longer, "tail", false})
		}
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, m := range members {
			h := &tar.Header{Name: m.name, Size: int64(len(m.data)), Mode: 0o644, Typeflag: tar.TypeReg, Format: format}
			if m.dir {
				h.Typeflag, h.Mode = tar.TypeDir, 0o755
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatalf("%v: %v", format, err)
			}
			io.WriteString(tw, m.data)
		}
		tw.Close()
		r := newTarReader(&b)
		for i, m := range members {
			h, err := r.Next()
			if err != nil {
				t.Fatalf("%v member %d: %v", format, i, err)
			}
			if i == 2 { // read the long member's content only partly: Next skips the rest
				buf := make([]byte, 10)
				io.ReadFull(r, buf)
			} else if got, _ := io.ReadAll(r); string(got) != m.data {
				t.Errorf("%v member %d: content %q, want %q", format, i, got, m.data)
			}
			if h.Name != m.name || h.Size != int64(len(m.data)) || h.Regular == m.dir {
				t.Errorf("%v member %d: %+v, want name %q size %d dir %v", format, i, h, m.name, len(m.data), m.dir)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("%v: after the last member: %v, want io.EOF", format, err)
		}
	}
}

func TestTarReaderFaults(t *testing.T) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "a.bin", Size: 700, Mode: 0o644})
	tw.Write(make([]byte, 700))
	tw.Close()
	good := b.Bytes()
	bad := bytes.Clone(good)
	bad[0] ^= 1 // the checksum no longer matches
	if _, err := newTarReader(bytes.NewReader(bad)).Next(); !errors.Is(err, errTarHeader) {
		t.Errorf("corrupt header: %v", err)
	}
	if _, err := newTarReader(bytes.NewReader(good[:300])).Next(); err != io.ErrUnexpectedEOF {
		t.Errorf("header cut short: %v", err)
	}
	r := newTarReader(bytes.NewReader(good[:512+600]))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != io.ErrUnexpectedEOF {
		t.Errorf("content cut short: %v", err)
	}
	if _, err := newTarReader(bytes.NewReader(good[:512+1024])).Next(); err != nil {
		t.Fatal(err)
	}
	r = newTarReader(bytes.NewReader(good[:512+1024]))
	r.Next()
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Errorf("no end-of-archive blocks: %v", err)
	}
}

// rawTarHeader is a 512-byte tar header block of a member name, type flag and size, with
// its checksum (the POSIX sum of the bytes, the checksum field counted as spaces).
func rawTarHeader(name string, flag byte, size int) []byte {
	b := make([]byte, 512)
	copy(b, name)
	copy(b[100:], "0000644\x00")
	copy(b[124:], []byte(strconv.FormatInt(int64(size), 8)+"\x00"))
	b[156] = flag
	copy(b[257:], "ustar\x0000")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], []byte(strconv.FormatInt(int64(sum), 8)+"\x00"))
	return b
}

// tarMember is a header block and its data padded to whole blocks.
func tarMember(name string, flag byte, data string, size int) []byte {
	b := rawTarHeader(name, flag, size)
	b = append(b, data...)
	return append(b, make([]byte, (512-len(data)%512)%512)...)
}

// TestTarLongNameGoesToTheMember: a GNU long name ('L') names the next member, not an
// extended ('x'), global ('g') or long-link ('K') header that comes between; a PAX size
// likewise; and it names only that member.
func TestTarLongNameGoesToTheMember(t *testing.T) {
	long := strings.Repeat("n", 150) + ".bin"
	var b []byte
	b = append(b, tarMember("././@LongLink", 'L', long+"\x00", len(long)+1)...)
	b = append(b, tarMember("pax", 'x', "10 size=5\n", 10)...)
	b = append(b, tarMember("global", 'g', "13 comment=a\n", 13)...)
	b = append(b, tarMember("././@LongLink", 'K', "target\x00", 7)...)
	b = append(b, tarMember("short.bin", '0', "hello", 0)...) // the PAX size (5) applies
	b = append(b, tarMember("next.bin", '0', "abc", 3)...)
	b = append(b, make([]byte, 1024)...)
	r := newTarReader(bytes.NewReader(b))
	for _, want := range []struct {
		name, data string
	}{{long, "hello"}, {"next.bin", "abc"}} {
		h, err := r.Next()
		if err != nil {
			t.Fatalf("want %s: %v", want.name, err)
		}
		got, _ := io.ReadAll(r)
		if h.Name != want.name || !h.Regular || h.Size != int64(len(want.data)) || string(got) != want.data {
			t.Errorf("member %+v with %q, want %s (regular, %q)", h, got, want.name, want.data)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last member: %v, want io.EOF", err)
	}
}
