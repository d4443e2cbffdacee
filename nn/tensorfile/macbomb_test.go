package tensorfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyedHead is the length prefix and header of a signed checkpoint's stream with one U8
// tensor of n bytes, in format 1 (the MAC over the tensors in name order) or format 2
// (a MAC of the header too), every MAC 64 hex digits of the wrong value: what an
// attacker without the key can write.
func keyedHead(n int64, format string) []byte {
	zeros := strings.Repeat("0", 64)
	md := `"nn.mac":"` + zeros + `",`
	if format == "privtrain-checkpoint/2" {
		md += `"nn.mac.header":"` + zeros + `",`
	}
	md += `"privtrain.format":"` + format + `","privtrain.sha256":"` + zeros + `"`
	h := fmt.Sprintf(`{"__metadata__":{%s},"w":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}`, md, n, n)
	return append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
}

// TestKeyedReadHonestBomb (issue 40, item 6): a keyed checkpoint whose header honestly
// describes nearly 4 GiB of tensors (the default limit), with a wrong MAC, is refused by
// ReadFile with WithKey (the read of checkpoint.LoadWithKey) with ErrAuthentication
// having allocated a few MiB, in either format. Before, the MAC covered the tensors in
// name order while the file stores them in another, so it was checked only once the
// whole content was in memory: 4.2 GB and 44–65 s. Format 1, whose MAC can only be
// checked by a pass over everything, is checked up to 1 GiB (legacyMACMaxSize) and
// refused as too large above.
func TestKeyedReadHonestBomb(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		format string
		n      int64
		want   error
	}{
		{"privtrain-checkpoint/2", 4<<30 - 1<<20, ErrAuthentication},
		{"privtrain-checkpoint/1", 4<<30 - 1<<20, ErrTooLarge},
		{"privtrain-checkpoint/1", legacyMACMaxSize - 1<<20, ErrAuthentication},
	} {
		format, n := tc.format, tc.n
		head := keyedHead(n, format)
		path := filepath.Join(dir, "bomb.ckpt")
		if err := os.WriteFile(path, zstdBomb(head, int64(len(head))+n, -1), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		got := allocated(func() { _, err = ReadFile(path, WithKey([]byte("0123456789abcdef"))) })
		if !errors.Is(err, tc.want) || errors.Is(err, ErrNoMAC) {
			t.Errorf("%s, %d bytes: keyed ReadFile error %v, want %v", format, n, err, tc.want)
		}
		if got > 64<<20 {
			t.Errorf("%s: keyed ReadFile allocated %d MiB refusing a wrong MAC, want < 64", format, got>>20)
		}
	}
}
