package download

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pin(name string, body []byte) RemoteFile {
	sum := sha256.Sum256(body)
	return RemoteFile{Name: name, Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
}

func TestCopyChecked(t *testing.T) {
	body := []byte("the pinned bytes\n")
	good := pin("f", body)
	other := sha256.Sum256([]byte("other bytes"))
	for _, tc := range []struct {
		name string
		r    []byte
		f    RemoteFile
		ok   bool
	}{
		{"good", body, good, true},
		{"upper-case digest", body, RemoteFile{Name: "f", Size: good.Size, SHA256: strings.ToUpper(good.SHA256)}, true},
		{"unknown size", body, RemoteFile{Name: "f", SHA256: good.SHA256}, true},
		{"short body", body[:len(body)-1], good, false},
		{"too-long body", append(append([]byte(nil), body...), 'x'), good, false},
		{"wrong digest", body, RemoteFile{Name: "f", Size: good.Size, SHA256: hex.EncodeToString(other[:])}, false},
	} {
		var out bytes.Buffer
		err := CopyChecked(&out, bytes.NewReader(tc.r), tc.f)
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			} else if !bytes.Equal(out.Bytes(), body) {
				t.Errorf("%s: copied %q, want %q", tc.name, out.Bytes(), body)
			}
			continue
		}
		if !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: error %v, want ErrChecksum", tc.name, err)
		}
		if int64(out.Len()) > tc.f.Size+1 {
			t.Errorf("%s: copied %d bytes, more than size+1 = %d", tc.name, out.Len(), tc.f.Size+1)
		}
	}
}

func TestFetchAndVerifyFile(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	good := pin("file.bin", body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good":
			w.Write(body)
		case "/long":
			w.Write(append(append([]byte(nil), body...), "trailing"...))
		case "/corrupt":
			b := append([]byte(nil), body...)
			b[7] ^= 1
			w.Write(b)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, good.Name)

	for _, bad := range []string{"/long", "/corrupt"} {
		if err := Fetch(ctx, srv.Client(), srv.URL+bad, path, good, nil); !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: error %v, want ErrChecksum", bad, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: %s exists after a refused download (%v)", bad, path, err)
		}
	}
	if err := Fetch(ctx, srv.Client(), srv.URL+"/missing", path, good, nil); err == nil || errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing: error %v, want the HTTP status", err)
	}

	var progress bytes.Buffer
	if err := Fetch(ctx, srv.Client(), srv.URL+"/good", path, good, &progress); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(progress.Bytes(), body) {
		t.Errorf("progress saw %d bytes, want %d", progress.Len(), len(body))
	}
	if err := VerifyFile(path, good, false); err != nil {
		t.Error(err)
	}
	if err := VerifyFile(path, pin(good.Name, body[1:]), false); !errors.Is(err, ErrChecksum) {
		t.Errorf("VerifyFile against another pin: %v, want ErrChecksum", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("dir holds %v (%v), want only %s", entries, err, good.Name)
	}

	// A gzipped copy verifies against the uncompressed file's pin.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()
	gzPath := filepath.Join(t.TempDir(), "file.bin.gz")
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyFile(gzPath, good, true); err != nil {
		t.Error(err)
	}
	if err := VerifyFile(gzPath, good, false); !errors.Is(err, ErrChecksum) {
		t.Errorf("gzipped file read as is: %v, want ErrChecksum", err)
	}
}
