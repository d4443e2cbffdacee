// Package download fetches the public data sets of the DP-SCD paper's experiments
// (Damaskinos et al., Sec. 5) from the LIBSVM collection into a directory, checking
// every file's size and SHA-256 digest, after which data.ReadFile reads them:
//
//	if err := download.Fetch(ctx, "data/libsvm", download.Phishing()); err != nil { … }
//	ds, err := data.ReadFile("data/libsvm/phishing", data.FormatLIBSVM)
//
// The digests were computed from public copies of the files whose row, feature and
// class counts match the published ones (UCI and LIBSVM; see Files). Nothing in the
// test suite touches the network: the tests serve files from a local server.
//
// It is a package of its own so that programs that only read data (cmd/erm) do not
// link net/http.
package download

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	core "github.com/privtrain/privtrain/internal/download"
)

// ErrChecksum reports a file whose size or SHA-256 digest is not the expected one. It is
// the same value as datasets/mnist/download.ErrChecksum (both are internal/download's).
var ErrChecksum = core.ErrChecksum

// LIBSVMBinary is the directory of the LIBSVM collection's binary data sets.
const LIBSVMBinary = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"

// RemoteFile is a file that Fetch fetches: its name, which is appended to the base URL
// and used in the target directory, and what it must be (Size in bytes, 0 when unknown;
// SHA256 the lower-case hex digest of the uncompressed file).
type RemoteFile = core.RemoteFile

// The pinned files. The digests are of public copies checked against the published
// counts (the tests re-check the counts on the copies kept in erm/data/testdata):
//
//   - phishing: 11,055 rows, 68 binary features (the 30 categorical UCI Phishing
//     Websites attributes one-hot encoded), 6,157 label-1 and 4,898 label-0 rows
//     (UCI: 6,157 legitimate, 4,898 phishing); found in
//     github.com/scikit-adaptation/skada-bench, commit 4120867, data/phishing/phishing.txt.
//
//   - a9a / a9a.t: LIBSVM's binarisation of UCI Adult, 123 features, 32,561 training
//     rows (7,841 labelled +1, i.e. >50K) and 16,281 test rows (3,846 +1), the UCI
//     adult.data / adult.test counts; found concatenated in
//     github.com/SofianeTanji/snacks, commit 352cf02, file a9a (48,842 rows), split at
//     row 32,561.
//
//   - adult.data / adult.test: UCI Adult's raw files (the paper's own Adult source,
//     which it encodes to 81 features: data.EncodeAdult), 32,561 records (24,720
//     <=50K, 7,841 >50K) and 16,281 records (12,435 / 3,846) after adult.test's
//     "|1x3 Cross validator" line; their MD5s are UCI's published ones
//     (5d7c39d7b8804f071cdd1f2a7c460872, 35238206dfdf7f1fe215bbb874adecdc, as pinned in
//     e.g. pfnet-research/deep-table and catboost's dataset loaders); found in
//     github.com/taspinar/siml, commit 2b14b14, datasets/adult/adult.data (also
//     matejklemen/deep-rf 46c5dcf data/adult.data) and
//     github.com/HieuNM6/machine_learning_example, commit 03628ff, adult.test (also
//     juan-barragan/PML 659d246 adult/adult.test). Fetch them with
//     WithBaseURL(UCIAdult).
//
// They were not compared with the LIBSVM server itself (no network here): should the
// server's bytes differ (line endings, trailing blanks), Fetch refuses them with
// ErrChecksum and the error names both digests.
var (
	phishing = RemoteFile{Name: "phishing", Size: 3631221, SHA256: "48bcea643233b42db820c601781db2a32e720e01f7e23be5e9b7326f32dc6503"}
	a9a      = RemoteFile{Name: "a9a", Size: 2329875, SHA256: "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906"}
	a9aTest  = RemoteFile{Name: "a9a.t", Size: 1164628, SHA256: "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9"}
	uciData  = RemoteFile{Name: "adult.data", Size: 3974305, SHA256: "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"}
	uciTest  = RemoteFile{Name: "adult.test", Size: 2003153, SHA256: "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"}
)

// UCIAdult is the directory of UCI Adult's raw files (adult.data, adult.test); pass it
// to Fetch with WithBaseURL and AdultUCI.
const UCIAdult = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"

// AdultUCI returns UCI Adult's raw adult.data and adult.test (fetch them from
// UCIAdult, not from the LIBSVM collection; read them with data.ReadAdult).
func AdultUCI() []RemoteFile { return []RemoteFile{uciData, uciTest} }

// Phishing returns LIBSVM's phishing file (the DP-SCD paper's logistic-regression data).
func Phishing() []RemoteFile { return []RemoteFile{phishing} }

// Adult returns LIBSVM's a9a and a9a.t (UCI Adult's training and test files, binarised
// to 123 features; the DP-SCD paper's SVM data, which it encodes to 81 features itself).
func Adult() []RemoteFile { return []RemoteFile{a9a, a9aTest} }

// Files returns every pinned file of the LIBSVM collection (not AdultUCI, which lives
// at another base URL).
func Files() []RemoteFile { return []RemoteFile{phishing, a9a, a9aTest} }

// An Option changes what Fetch does.
type Option func(*config)

type config struct {
	base   string
	client *http.Client
}

// WithBaseURL replaces the base URL (LIBSVMBinary) the file names are appended to.
func WithBaseURL(url string) Option { return func(c *config) { c.base = url } }

// WithHTTPClient sets the client used for requests (default http.DefaultClient).
func WithHTTPClient(client *http.Client) Option { return func(c *config) { c.client = client } }

// Fetch downloads files into dir (created if needed). A file is written under a
// temporary name and renamed only once its size and digest are verified, so dir never
// holds a partial or unverified file under the file's name; a file already present
// with the right digest is kept, not fetched again. errors.Is(err, ErrChecksum)
// reports a digest mismatch. Cancelling ctx stops the download at once.
func Fetch(ctx context.Context, dir string, files []RemoteFile, opts ...Option) error {
	c := config{base: LIBSVMBinary, client: http.DefaultClient}
	for _, o := range opts {
		o(&c)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if Verify(path, f) == nil {
			continue
		}
		url := strings.TrimSuffix(c.base, "/") + "/" + f.Name
		err := core.Fetch(ctx, c.client, url, path, f, nil)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("download %s: %w", f.Name, ctx.Err())
			}
			return fmt.Errorf("download %s from %s into %s: %w", f.Name, url, dir, err)
		}
	}
	return nil
}

// Verify checks that the file at path is f. A path ending in ".gz" is decompressed
// first, so a gzipped copy (such as those in erm/data/testdata) verifies against the
// digest of the uncompressed file.
func Verify(path string, f RemoteFile) error {
	return core.VerifyFile(path, f, strings.HasSuffix(path, ".gz"))
}
