package mnist

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/safeio"
)

// DebianFashionDir is where the Debian package dataset-fashion-mnist installs the
// Fashion-MNIST files (apt install dataset-fashion-mnist).
const DebianFashionDir = "/usr/share/datasets/fashion-mnist"

// The standard file names of MNIST and Fashion-MNIST; each may also carry .gz.
const (
	TrainImages = "train-images-idx3-ubyte"
	TrainLabels = "train-labels-idx1-ubyte"
	TestImages  = "t10k-images-idx3-ubyte"
	TestLabels  = "t10k-labels-idx1-ubyte"
)

const (
	mnistHint   = "download them with download.MNIST (package datasets/mnist/download; Download in the README), or from https://ossci-datasets.s3.amazonaws.com/mnist/"
	fashionHint = "install the Debian package dataset-fashion-mnist (apt install dataset-fashion-mnist puts them in " +
		DebianFashionDir + "), or download them from https://github.com/zalandoresearch/fashion-mnist"
)

// Load reads MNIST from dir, which holds the four standard files (train-images-idx3-ubyte,
// train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte), each raw or
// gzipped with a .gz suffix. It returns the 60,000 training and 10,000 test images, each
// of shape [1 rows cols] (1×28×28 for MNIST), with labels 0 to 9.
func Load(dir string) (train, test *datasets.Images, err error) {
	if err := checkDir(dir); err != nil {
		return nil, nil, err
	}
	return named(Classes[:])(loadFS(os.DirFS(dir), dir, mnistHint))
}

// LoadFashion reads Fashion-MNIST from dir, e.g. DebianFashionDir. The files have the
// same names and format as MNIST's; only the advice in the error for missing files
// differs from Load. The classes are listed in FashionClasses.
func LoadFashion(dir string) (train, test *datasets.Images, err error) {
	if err := checkDir(dir); err != nil {
		return nil, nil, err
	}
	return named(FashionClasses[:])(loadFS(os.DirFS(dir), dir, fashionHint))
}

// FashionClasses names the labels 0 to 9 of Fashion-MNIST (the data set's README,
// github.com/zalandoresearch/fashion-mnist). The datasets of LoadFashion and
// LoadFashionTrain carry them (datasets.ClassNames).
var FashionClasses = [10]string{
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
}

// Classes names the labels 0 to 9 of MNIST: the digits. The datasets of Load, LoadTrain
// and Embedded carry them (datasets.ClassNames); LoadFiles, which cannot tell MNIST
// from Fashion-MNIST, names none.
var Classes = [10]string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// named returns a function that names the classes of the datasets loadFS returns.
func named(names []string) func(train, test *datasets.Images, err error) (*datasets.Images, *datasets.Images, error) {
	return func(train, test *datasets.Images, err error) (*datasets.Images, *datasets.Images, error) {
		if err != nil {
			return nil, nil, err
		}
		if train, err = train.WithClassNames(names); err != nil {
			return nil, nil, fmt.Errorf("mnist: %w", err)
		}
		if test, err = test.WithClassNames(names); err != nil {
			return nil, nil, fmt.Errorf("mnist: %w", err)
		}
		return train, test, nil
	}
}

// namedTrain names the classes of the dataset loadTrainFS returns.
func namedTrain(names []string, train *datasets.Images, err error) (*datasets.Images, error) {
	if err != nil {
		return nil, err
	}
	if train, err = train.WithClassNames(names); err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	return train, nil
}

// LoadFiles reads one pair of IDX files, images (idx3) and labels (idx1), raw or gzipped
// (recognised by content, whatever the name).
func LoadFiles(images, labels string) (*datasets.Images, error) {
	img, err := openIDX(os.DirFS(filepath.Dir(images)), filepath.Base(images), images)
	if err != nil {
		return nil, err
	}
	lab, err := openIDX(os.DirFS(filepath.Dir(labels)), filepath.Base(labels), labels)
	if err != nil {
		return nil, err
	}
	return decodePair(img, lab)
}

// LoadTrain reads only MNIST's training pair (train-images-idx3-ubyte and
// train-labels-idx1-ubyte, raw or .gz) from dir, as Load does; the test files are not
// opened, so they may be missing or damaged. For a caller that never uses the test set,
// such as training on a validation split of the training set.
func LoadTrain(dir string) (*datasets.Images, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	train, err := loadTrainFS(os.DirFS(dir), dir, mnistHint)
	return namedTrain(Classes[:], train, err)
}

// LoadFashionTrain is LoadTrain for Fashion-MNIST (LoadFashion's advice for missing files).
func LoadFashionTrain(dir string) (*datasets.Images, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	train, err := loadTrainFS(os.DirFS(dir), dir, fashionHint)
	return namedTrain(FashionClasses[:], train, err)
}

// findAll locates each of bases (raw or .gz) in the directory fsys; where names it in
// messages, hint says how to get missing files.
func findAll(fsys fs.FS, where, hint string, bases ...string) ([]idxFile, error) {
	if st, err := fs.Stat(fsys, "."); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("mnist: directory %s: %w; %s", where, fs.ErrNotExist, hint)
	}
	files := make([]idxFile, len(bases))
	for i, base := range bases {
		var err error
		if files[i], err = findIDX(fsys, where, base, hint); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// loadTrainFS reads the training split from fsys, as loadFS does.
func loadTrainFS(fsys fs.FS, where, hint string) (*datasets.Images, error) {
	files, err := findAll(fsys, where, hint, TrainImages, TrainLabels)
	if err != nil {
		return nil, err
	}
	return decodePair(files[0], files[1])
}

// loadFS reads both splits from fsys; where names it in messages, hint says how to get
// missing files.
func loadFS(fsys fs.FS, where, hint string) (train, test *datasets.Images, err error) {
	files, err := findAll(fsys, where, hint, TrainImages, TrainLabels, TestImages, TestLabels)
	if err != nil {
		return nil, nil, err
	}
	// The two splits decode in parallel; gzip decoding is the main cost.
	var wg sync.WaitGroup
	var testErr error
	wg.Go(func() { test, testErr = decodePair(files[2], files[3]) })
	train, err = decodePair(files[0], files[1])
	wg.Wait()
	if err = errors.Join(err, testErr); err != nil {
		return nil, nil, err
	}
	if !equalShape(train.Shape(), test.Shape()) {
		return nil, nil, fmt.Errorf("mnist: %s: %w: training images are %v, test images %v",
			where, ErrDimensions, train.Shape(), test.Shape())
	}
	return train, test, nil
}

func equalShape(a, b []int) bool {
	return len(a) == len(b) && a[0] == b[0] && a[1] == b[1] && a[2] == b[2]
}

// idxFile is a located file, not yet opened.
type idxFile struct {
	fsys fs.FS
	name string // within fsys
	path string // for messages
}

// findIDX locates base or base.gz in fsys.
func findIDX(fsys fs.FS, where, base, hint string) (idxFile, error) {
	for _, name := range []string{base, base + ".gz"} {
		if st, err := fs.Stat(fsys, name); err == nil {
			path := filepath.Join(where, name)
			if err := safeio.CheckRegular(st, path); err != nil {
				return idxFile{}, fmt.Errorf("mnist: %w", err)
			}
			return idxFile{fsys, name, path}, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return idxFile{}, fmt.Errorf("mnist: %w", err)
		}
	}
	return idxFile{}, fmt.Errorf("mnist: no %s or %s.gz in %s: %w; %s", base, base, where, fs.ErrNotExist, hint)
}

func openIDX(fsys fs.FS, name, path string) (idxFile, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return idxFile{}, fmt.Errorf("mnist: %s: %w", path, err)
	}
	if err := safeio.CheckRegular(st, path); err != nil {
		return idxFile{}, fmt.Errorf("mnist: %w", err)
	}
	return idxFile{fsys, name, path}, nil
}

// decode opens the file, undoes gzip when the content starts with gzip's magic bytes
// (IDX files start with two zero bytes, so the two cannot be confused) and runs dec on
// the IDX bytes with a hint of the data size.
func (f idxFile) decode(dec func(r io.Reader, hint int) error) error {
	file, err := f.fsys.Open(f.name)
	if err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return fmt.Errorf("mnist: %s: %w", f.path, err)
	}
	if err := safeio.CheckRegular(st, f.path); err != nil {
		return fmt.Errorf("mnist: %w", err)
	}
	hint := int(st.Size())
	r, zipped, err := maybeGunzip(bufio.NewReaderSize(file, 1<<16))
	if err != nil {
		return fmt.Errorf("mnist: %s: %w", f.path, err)
	}
	if zipped {
		hint = gzipHint(file, st.Size())
	}
	if err := gzipTruncated(dec(r, hint)); err != nil {
		return fmt.Errorf("mnist: %s: %w", f.path, err)
	}
	return nil
}

// maybeGunzip undoes gzip when the content starts with gzip's magic bytes (IDX files
// start with two zero bytes, so the two cannot be confused).
func maybeGunzip(br *bufio.Reader) (r io.Reader, zipped bool, err error) {
	if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return br, false, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, false, fmt.Errorf("gzip: %w", err)
	}
	return zr, true, nil
}

// gzipTruncated reports the io.ErrUnexpectedEOF of a gzip stream cut short as
// ErrTruncated.
func gzipTruncated(err error) error {
	if err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: compressed stream incomplete", ErrTruncated)
	}
	return err
}

// DecodeImages reads an IDX file of unsigned-byte images (magic 0x00000803: the number of
// images, rows and columns as big-endian uint32, then the pixels, image after image, row
// after row), raw or gzipped, as Load reads the images of MNIST. maxBytes > 0 bounds the
// pixel bytes that the header may announce (a larger file is ErrDimensions; 600 MiB at
// most, above the largest real data set, whatever maxBytes says); the buffer grows only
// as data arrives. Errors match ErrMagic, ErrDimensions, ErrTruncated and
// ErrTrailingData under errors.Is.
func DecodeImages(r io.Reader, maxBytes int) (n, rows, cols int, pixels []byte, err error) {
	in, _, err := maybeGunzip(bufio.NewReader(r))
	if err != nil {
		return 0, 0, 0, nil, err
	}
	n, rows, cols, pixels, err = decodeImagesMax(in, 0, maxBytes)
	return n, rows, cols, pixels, gzipTruncated(err)
}

// maxDeflateRatio bounds the bytes that one compressed byte of deflate can expand to
// (a 258-byte match costs at least two bits: 1032 to 1).
const maxDeflateRatio = 1032

// gzipHint returns the uncompressed size recorded in a gzip file's last four bytes
// (modulo 2³², per RFC 1952), capped by what size compressed bytes can expand to, or 0
// when it cannot be read. The trailer is written by whoever wrote the file, so it is only
// a hint, and the cap keeps a tiny file from reserving gigabytes with it.
func gzipHint(file fs.File, size int64) int {
	ra, ok := file.(io.ReaderAt)
	if !ok || size < 18 {
		return 0
	}
	var b [4]byte
	if _, err := ra.ReadAt(b[:], size-4); err != nil {
		return 0
	}
	return int(min(int64(binary.LittleEndian.Uint32(b[:])), size*maxDeflateRatio))
}

// decodePair decodes an images file and its labels file into a dataset.
func decodePair(images, labels idxFile) (*datasets.Images, error) {
	var (
		n, rows, cols int
		pixels, lab   []byte
	)
	err := images.decode(func(r io.Reader, hint int) (err error) {
		n, rows, cols, pixels, err = decodeImages(r, hint-16)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = labels.decode(func(r io.Reader, hint int) (err error) {
		lab, err = decodeLabels(r, hint-8)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(lab) != n {
		return nil, fmt.Errorf("mnist: %w: %d images in %s, %d labels in %s", ErrCountMismatch, n, images.path, len(lab), labels.path)
	}
	return datasets.NewImages([]int{1, rows, cols}, numClasses, pixels, lab)
}

// checkDir refuses a dir that is a file, which os.DirFS would report as missing.
func checkDir(dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("mnist: %s is a file, not a directory: give the directory that holds the four IDX files (%s, %s, %s, %s, each raw or .gz)",
			dir, TrainImages, TrainLabels, TestImages, TestLabels)
	}
	return nil
}
