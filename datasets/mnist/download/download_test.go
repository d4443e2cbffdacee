package download

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privtrain/privtrain/datasets/mnist"
)

func idx3(magic uint32, n, rows, cols int, pixels []byte) []byte {
	var b bytes.Buffer
	for _, v := range []uint32{magic, uint32(n), uint32(rows), uint32(cols)} {
		binary.Write(&b, binary.BigEndian, v)
	}
	b.Write(pixels)
	return b.Bytes()
}

func idx1(magic uint32, labels []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, uint32(len(labels)))
	b.Write(labels)
	return b.Bytes()
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pattern returns n images of rows×cols whose pixel j of image i is (7i+j) mod 256.
func pattern(n, rows, cols int) []byte {
	px := make([]byte, n*rows*cols)
	for i := range n {
		for j := range rows * cols {
			px[i*rows*cols+j] = byte(7*i + j)
		}
	}
	return px
}

// The tests serve files from local httptest servers only; Download never reaches the
// network here.

// remote describes data as a RemoteFile with the digest computed here.
func remote(name string, data []byte) RemoteFile {
	sum := sha256.Sum256(data)
	return RemoteFile{Name: name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
}

// mirror serves files by name and counts requests; handler, when set, answers instead.
type mirror struct {
	*httptest.Server
	files    map[string][]byte
	requests atomic.Int32
}

func newMirror(t *testing.T, files map[string][]byte, handler http.HandlerFunc) *mirror {
	m := &mirror{files: files}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.requests.Add(1)
		if handler != nil {
			handler(w, r)
			return
		}
		data, ok := m.files[strings.TrimPrefix(r.URL.Path, "/data/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mirror) url() string { return m.URL + "/data/" }

// standardFiles returns a small valid MNIST-like set under the four standard .gz names.
func standardFiles(t *testing.T) (map[string][]byte, []RemoteFile) {
	files := map[string][]byte{
		mnist.TrainImages + ".gz": gz(t, idx3(0x803, 3, 28, 28, pattern(3, 28, 28))),
		mnist.TrainLabels + ".gz": gz(t, idx1(0x801, []byte{1, 2, 3})),
		mnist.TestImages + ".gz":  gz(t, idx3(0x803, 2, 28, 28, pattern(2, 28, 28))),
		mnist.TestLabels + ".gz":  gz(t, idx1(0x801, []byte{7, 0})),
	}
	var list []RemoteFile
	for _, name := range []string{mnist.TrainImages, mnist.TrainLabels, mnist.TestImages, mnist.TestLabels} {
		list = append(list, remote(name+".gz", files[name+".gz"]))
	}
	return files, list
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestDownloadThenLoad(t *testing.T) {
	files, list := standardFiles(t)
	m := newMirror(t, files, nil)
	dir := filepath.Join(t.TempDir(), "mnist")
	var last = map[string][2]int64{}
	err := MNIST(context.Background(), dir, WithMirrors(m.url()), WithFiles(list...),
		WithProgress(func(file string, done, total int64) { last[file] = [2]int64{done, total} }))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range list {
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil || string(got) != string(files[f.Name]) {
			t.Errorf("%s: content differs (%v)", f.Name, err)
		}
		if p := last[f.Name]; p[0] != f.Size || p[1] != f.Size {
			t.Errorf("%s: last progress %v, want %d of %d", f.Name, p, f.Size, f.Size)
		}
	}
	train, test, err := mnist.Load(dir)
	if err != nil || train.Len() != 3 || test.Len() != 2 {
		t.Fatalf("Load after Download: %v", err)
	}

	// Present and valid files are not fetched again.
	before := m.requests.Load()
	if err := MNIST(context.Background(), dir, WithMirrors(m.url()), WithFiles(list...)); err != nil {
		t.Fatal(err)
	}
	if n := m.requests.Load() - before; n != 0 {
		t.Errorf("second Download made %d requests, want 0", n)
	}
}

func TestDownloadFallsThroughMirrors(t *testing.T) {
	files, list := standardFiles(t)
	broken := newMirror(t, map[string][]byte{}, nil) // 404 for everything
	good := newMirror(t, files, nil)
	dir := t.TempDir()
	if err := MNIST(context.Background(), dir, WithMirrors(broken.url(), strings.TrimSuffix(good.url(), "/")), WithFiles(list...)); err != nil {
		t.Fatal(err)
	}
	if broken.requests.Load() != 4 || good.requests.Load() != 4 {
		t.Errorf("requests: first mirror %d, second %d; want 4 and 4", broken.requests.Load(), good.requests.Load())
	}
	if _, _, err := mnist.Load(dir); err != nil {
		t.Error(err)
	}
}

func TestDownloadChecksum(t *testing.T) {
	files, list := standardFiles(t)
	corrupt := map[string][]byte{}
	for name, data := range files {
		c := []byte(string(data))
		c[len(c)/2] ^= 1
		corrupt[name] = c
	}
	for name, serve := range map[string]map[string][]byte{
		"flipped bit": corrupt,
		"extra byte":  {list[0].Name: append([]byte(string(files[list[0].Name])), 0)},
		"short":       {list[0].Name: files[list[0].Name][:10]},
	} {
		m := newMirror(t, serve, nil)
		dir := t.TempDir()
		err := MNIST(context.Background(), dir, WithMirrors(m.url()), WithFiles(list[0]))
		if !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: error %v, want ErrChecksum", name, err)
		}
		if e := dirEntries(t, dir); len(e) != 0 {
			t.Errorf("%s: left %v behind", name, e)
		}
	}
	// A corrupt first mirror and a good second one: the good copy is used, and the
	// error of the first is not reported.
	bad, good := newMirror(t, corrupt, nil), newMirror(t, files, nil)
	if err := MNIST(context.Background(), t.TempDir(), WithMirrors(bad.url(), good.url()), WithFiles(list...)); err != nil {
		t.Error(err)
	}
}

func TestDownloadReplacesWrongFile(t *testing.T) {
	files, list := standardFiles(t)
	m := newMirror(t, files, nil)
	dir := t.TempDir()
	path := filepath.Join(dir, list[1].Name)
	os.WriteFile(path, []byte("stale"), 0o644)
	if err := MNIST(context.Background(), dir, WithMirrors(m.url()), WithFiles(list[1])); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(files[list[1].Name]) {
		t.Error("stale file not replaced")
	}
}

// A connection that breaks mid-body leaves nothing behind, on every mirror.
func TestDownloadPartialNeverLeftBehind(t *testing.T) {
	files, list := standardFiles(t)
	data := files[list[0].Name]
	cut := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	a, b := newMirror(t, nil, cut), newMirror(t, nil, cut)
	dir := t.TempDir()
	err := MNIST(context.Background(), dir, WithMirrors(a.url(), b.url()), WithFiles(list[0]))
	if err == nil {
		t.Fatal("no error for broken connections")
	}
	if !strings.Contains(err.Error(), a.url()) || !strings.Contains(err.Error(), b.url()) {
		t.Errorf("error does not name both mirrors: %v", err)
	}
	if e := dirEntries(t, dir); len(e) != 0 {
		t.Errorf("left %v behind", e)
	}
	if a.requests.Load() != 1 || b.requests.Load() != 1 {
		t.Errorf("requests %d, %d; want 1, 1", a.requests.Load(), b.requests.Load())
	}
}

func TestDownloadCancel(t *testing.T) {
	_, list := standardFiles(t)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	// The stalled body must stay shorter than the file's size: a body longer than
	// the size is rejected as corrupt at once, before the cancel, and the
	// downloader rightly moves on to the next mirror (this raced when the stall
	// wrote 1000 bytes of a 330-byte file).
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(list[0].Size, 10))
		w.Write(make([]byte, list[0].Size/2))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}
	a, b := newMirror(t, nil, stall), newMirror(t, nil, nil)
	dir := t.TempDir()
	go func() { <-started; cancel() }()
	done := make(chan error)
	go func() { done <- MNIST(ctx, dir, WithMirrors(a.url(), b.url()), WithFiles(list[0])) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Download did not return after cancel")
	}
	if b.requests.Load() != 0 {
		t.Error("went on to the next mirror after cancel")
	}
	if e := dirEntries(t, dir); len(e) != 0 {
		t.Errorf("left %v behind", e)
	}
}

func TestDownloadNoMirrors(t *testing.T) {
	if err := MNIST(context.Background(), t.TempDir(), WithMirrors()); err == nil {
		t.Error("no error without mirrors")
	}
}
