// Package download fetches the full MNIST from public mirrors into a directory, checking
// every file's size and SHA-256 digest, after which mnist.Load reads it:
//
//	if err := download.MNIST(ctx, "data/mnist"); err != nil { … }
//	train, test, err := mnist.Load("data/mnist")
//
// It is a package of its own so that programs that only read data (cmd/train) do not
// link net/http, whose resolver needs cgo and would make their binaries dynamic.
package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/internal/atomicfile"
)

// ErrChecksum reports a file whose size or SHA-256 digest is not the expected one.
var ErrChecksum = errors.New("checksum mismatch")

// RemoteFile is a file that MNIST fetches: its name, which is appended to each
// mirror's URL and used in the target directory, and what it must be.
type RemoteFile struct {
	Name   string
	Size   int64  // bytes; 0 when unknown
	SHA256 string // lower-case hex digest
}

// DefaultMirrors returns the mirrors MNIST tries, in order: PyTorch's and
// TensorFlow's copies of MNIST (yann.lecun.com no longer serves the files reliably).
func DefaultMirrors() []string {
	return []string{
		"https://ossci-datasets.s3.amazonaws.com/mnist/",
		"https://storage.googleapis.com/cvdf-datasets/mnist/",
	}
}

// Files returns the four standard MNIST files with their sizes and SHA-256 digests, as
// listed by TensorFlow Datasets (tensorflow_datasets/url_checksums/mnist.txt).
func Files() []RemoteFile {
	return []RemoteFile{
		{mnist.TrainImages + ".gz", 9912422, "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},
		{mnist.TrainLabels + ".gz", 28881, "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},
		{mnist.TestImages + ".gz", 1648877, "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},
		{mnist.TestLabels + ".gz", 4542, "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"},
	}
}

// An Option changes what MNIST does.
type Option func(*downloadConfig)

type downloadConfig struct {
	mirrors  []string
	files    []RemoteFile
	client   *http.Client
	progress func(file string, done, total int64)
}

// WithMirrors replaces the list of mirrors (base URLs; a missing final slash is added).
func WithMirrors(urls ...string) Option {
	return func(c *downloadConfig) { c.mirrors = append([]string(nil), urls...) }
}

// WithFiles replaces the files to fetch, e.g. to fetch another data set in IDX format.
func WithFiles(files ...RemoteFile) Option {
	return func(c *downloadConfig) { c.files = append([]RemoteFile(nil), files...) }
}

// WithHTTPClient sets the client used for requests (default http.DefaultClient).
func WithHTTPClient(client *http.Client) Option {
	return func(c *downloadConfig) { c.client = client }
}

// WithProgress has MNIST report its progress: f is called with the file's name, the
// bytes received so far and the expected size (0 when unknown), repeatedly while a file
// downloads. f is also called once for a file already present and valid.
func WithProgress(f func(file string, done, total int64)) Option {
	return func(c *downloadConfig) { c.progress = f }
}

// MNIST fetches the four MNIST files into dir (created if needed), after which
// mnist.Load(dir) reads them. Each file is taken from the first mirror that delivers it with
// the expected size and SHA-256 digest; a failing mirror (unreachable, HTTP error, wrong
// digest) is skipped for the next. A file is written under a temporary name and renamed
// only once verified, so dir never holds a partial or unverified file under a standard
// name. Files already present with the right digest are kept, not fetched again.
//
// The error names every mirror's failure; errors.Is(err, ErrChecksum) reports a digest
// mismatch among them. Cancelling ctx stops the download at once.
func MNIST(ctx context.Context, dir string, opts ...Option) error {
	c := downloadConfig{mirrors: DefaultMirrors(), files: Files(), client: http.DefaultClient}
	for _, o := range opts {
		o(&c)
	}
	if len(c.mirrors) == 0 {
		return errors.New("download: no mirrors")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	for _, f := range c.files {
		if err := c.fetch(ctx, dir, f); err != nil {
			return err
		}
	}
	return nil
}

func (c *downloadConfig) fetch(ctx context.Context, dir string, f RemoteFile) error {
	path := filepath.Join(dir, f.Name)
	if verifyFile(path, f) == nil {
		if c.progress != nil {
			c.progress(f.Name, f.Size, f.Size)
		}
		return nil
	}
	var errs []error
	for _, m := range c.mirrors {
		url := strings.TrimSuffix(m, "/") + "/" + f.Name
		err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return c.get(ctx, url, f, w) })
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("download %s: %w", f.Name, ctx.Err())
		}
		errs = append(errs, fmt.Errorf("%s: %w", url, err))
	}
	return fmt.Errorf("download %s into %s: every mirror failed:\n%w", f.Name, dir, errors.Join(errs...))
}

// get copies url's body into w, checking size and digest on the way.
func (c *downloadConfig) get(ctx context.Context, url string, f RemoteFile, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	limit := f.Size + 1 // one byte more than expected reveals a too-long body
	if f.Size <= 0 {
		limit = 1 << 32
	}
	h := sha256.New()
	pw := &progressWriter{name: f.Name, total: f.Size, report: c.progress}
	n, err := io.Copy(io.MultiWriter(w, h, pw), io.LimitReader(resp.Body, limit))
	if err != nil {
		return err
	}
	return checkDigest(n, h.Sum(nil), f)
}

func checkDigest(n int64, sum []byte, f RemoteFile) error {
	if f.Size > 0 && n != f.Size {
		return fmt.Errorf("%w: %d bytes, want %d", ErrChecksum, n, f.Size)
	}
	if got := hex.EncodeToString(sum); got != strings.ToLower(f.SHA256) {
		return fmt.Errorf("%w: SHA-256 %s, want %s", ErrChecksum, got, f.SHA256)
	}
	return nil
}

// verifyFile reports whether the file at path is f.
func verifyFile(path string, f RemoteFile) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	h := sha256.New()
	n, err := io.Copy(h, file)
	if err != nil {
		return err
	}
	return checkDigest(n, h.Sum(nil), f)
}

type progressWriter struct {
	name        string
	done, total int64
	report      func(file string, done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.report != nil {
		p.report(p.name, p.done, p.total)
	}
	return len(b), nil
}
