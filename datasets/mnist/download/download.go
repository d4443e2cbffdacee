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
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/privtrain/privtrain/datasets/mnist"
	core "github.com/privtrain/privtrain/internal/download"
)

// ErrChecksum reports a file whose size or SHA-256 digest is not the expected one. It is
// the same value as erm/data/download.ErrChecksum (both are internal/download's).
var ErrChecksum = core.ErrChecksum

// RemoteFile is a file that MNIST fetches: its name, which is appended to each
// mirror's URL and used in the target directory, and what it must be (Size in bytes, 0
// when unknown; SHA256 the lower-case hex digest).
type RemoteFile = core.RemoteFile

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
		{Name: mnist.TrainImages + ".gz", Size: 9912422, SHA256: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},
		{Name: mnist.TrainLabels + ".gz", Size: 28881, SHA256: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},
		{Name: mnist.TestImages + ".gz", Size: 1648877, SHA256: "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},
		{Name: mnist.TestLabels + ".gz", Size: 4542, SHA256: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"},
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
	if core.VerifyFile(path, f, false) == nil {
		if c.progress != nil {
			c.progress(f.Name, f.Size, f.Size)
		}
		return nil
	}
	var errs []error
	for _, m := range c.mirrors {
		url := strings.TrimSuffix(m, "/") + "/" + f.Name
		var progress io.Writer // nil: no progress
		if c.progress != nil {
			progress = &progressWriter{name: f.Name, total: f.Size, report: c.progress}
		}
		err := core.Fetch(ctx, c.client, url, path, f, progress)
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

// progressWriter reports the bytes received so far of one download attempt.
type progressWriter struct {
	name        string
	done, total int64
	report      func(file string, done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	p.report(p.name, p.done, p.total)
	return len(b), nil
}
