package cifar

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/klauspost/compress/gzip"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/safeio"
)

// Errors of the readers, wrapped with the file's path and the details; test for them
// with errors.Is.
var (
	ErrRecordSize    = errors.New("not a whole number of records")
	ErrTruncated     = datasets.ErrTruncated // the same error in both readers
	ErrLabelRange    = datasets.ErrLabelRange
	ErrLabelConflict = errors.New("fine class in more than one coarse class")
	// ErrNotArchive: a file given as the archive is not gzip-compressed (a file of
	// another kind, or the wrong file).
	ErrNotArchive = errors.New("not a .tar.gz archive")
)

// Classes10 names the labels 0 to 9 of CIFAR-10 (batches.meta.txt of the archive).
var Classes10 = [10]string{
	"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
}

// Classes100 names CIFAR-100's fine labels 0 to 99 (fine_label_names.txt of the binary
// archive, which lists them in alphabetical order).
var Classes100 = [100]string{
	"apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle",
	"bowl", "boy", "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle",
	"chair", "chimpanzee", "clock", "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur",
	"dolphin", "elephant", "flatfish", "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard",
	"lamp", "lawn_mower", "leopard", "lion", "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain",
	"mouse", "mushroom", "oak_tree", "orange", "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree",
	"plain", "plate", "poppy", "porcupine", "possum", "rabbit", "raccoon", "ray", "road", "rocket",
	"rose", "sea", "seal", "shark", "shrew", "skunk", "skyscraper", "snail", "snake", "spider",
	"squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank", "telephone", "television", "tiger", "tractor",
	"train", "trout", "tulip", "turtle", "wardrobe", "whale", "willow_tree", "wolf", "woman", "worm",
}

// CoarseClasses100 names CIFAR-100's coarse labels (superclasses) 0 to 19
// (coarse_label_names.txt of the binary archive).
var CoarseClasses100 = [20]string{
	"aquatic_mammals", "fish", "flowers", "food_containers", "fruit_and_vegetables",
	"household_electrical_devices", "household_furniture", "insects", "large_carnivores",
	"large_man-made_outdoor_things", "large_natural_outdoor_scenes", "large_omnivores_and_herbivores",
	"medium_mammals", "non-insect_invertebrates", "people", "reptiles", "small_mammals", "trees",
	"vehicles_1", "vehicles_2",
}

const (
	imageBytes = 3 * 32 * 32
	// maxRecords bounds a file's records (the largest real file, CIFAR-100's train.bin,
	// has 50,000) so that a corrupt archive header cannot ask for gigabytes.
	maxRecords = 1 << 17
	// batchRecords is the records of a real batch file: decodeRecords reserves room for
	// no more before the data has arrived, whatever a tar header claims.
	batchRecords = 10000
	// maxArchive bounds the decompressed bytes of an archive (the real ones hold 185 MB),
	// so that a gzip bomb is refused instead of being read for as long as it expands.
	maxArchive = 1 << 30
)

// format describes one of the two data sets.
type format struct {
	name       string
	dir        string // directory inside the archive
	archive    string
	train      []string
	test       []string
	full       map[string]int // records of each official file (fewer: a partial file)
	labelNames []string       // one per label byte, in record order
	classes    []int          // number of classes per label byte
	classNames [][]string     // the classes' names, per label byte
}

var (
	cifar10 = &format{
		name:    "CIFAR-10",
		dir:     "cifar-10-batches-bin",
		archive: "cifar-10-binary.tar.gz",
		train:   []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"},
		test:    []string{"test_batch.bin"},
		full: map[string]int{"data_batch_1.bin": batchRecords, "data_batch_2.bin": batchRecords, "data_batch_3.bin": batchRecords,
			"data_batch_4.bin": batchRecords, "data_batch_5.bin": batchRecords, "test_batch.bin": batchRecords},
		labelNames: []string{"label"},
		classes:    []int{10},
		classNames: [][]string{Classes10[:]},
	}
	cifar100 = &format{
		name:       "CIFAR-100",
		dir:        "cifar-100-binary",
		archive:    "cifar-100-binary.tar.gz",
		train:      []string{"train.bin"},
		test:       []string{"test.bin"},
		full:       map[string]int{"train.bin": 50000, "test.bin": batchRecords},
		labelNames: []string{"coarse label", "fine label"},
		classes:    []int{20, 100},
		classNames: [][]string{CoarseClasses100[:], Classes100[:]},
	}
)

func (f *format) recordBytes() int { return len(f.classes) + imageBytes }

func (f *format) hint() string {
	return fmt.Sprintf("get %s from https://www.cs.toronto.edu/~kriz/cifar.html (the binary version) and pass "+
		"the archive, the directory it unpacks to (%s/), or the directory holding either", f.archive, f.dir)
}

// An Option changes what Load10 or Load100 returns.
type Option func(*config)

type config struct {
	coarse, trainOnly bool
	notes             *[]string
}

// WithNotes appends to *notes what a caller should tell the user about the files read:
// one note per file with fewer (or more) records than the official file, such as
// "data_batch_1.bin: 1,017 of 10,000 records (a partial file)". A file that is not a
// whole number of records is refused whatever the options.
func WithNotes(notes *[]string) Option { return func(c *config) { c.notes = notes } }

// note hands the loaded files' notes to the caller of WithNotes.
func (c config) note(s *sets) {
	if c.notes != nil {
		*c.notes = append(*c.notes, s.notes()...)
	}
}

// TrainOnly makes Load10 and Load100 read the training files only: the test file is
// not read (it may be missing or damaged) and test is nil. For a caller that never
// uses the test set, such as training on a validation split of the training set.
func TrainOnly() Option { return func(c *config) { c.trainOnly = true } }

// format returns f, without its test files with c.trainOnly.
func (c config) format(f *format) *format {
	if !c.trainOnly {
		return f
	}
	g := *f
	g.test = nil
	return &g
}

// CoarseLabels makes Load100 label images with their 20 coarse classes (superclasses)
// instead of the 100 fine classes.
func CoarseLabels() Option { return func(c *config) { c.coarse = true } }

// Load10 reads CIFAR-10 from path: the archive cifar-10-binary.tar.gz, the directory
// cifar-10-batches-bin, or a directory holding either. It returns the five training
// batches in order as one dataset, and the test batch (nil with TrainOnly). Files with
// fewer records than the official 10,000 (a sample of the data set, such as the first
// 1,017 records of each batch) are read whole; WithNotes says which.
func Load10(path string, opts ...Option) (train, test *datasets.Images, err error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s, err := load(path, c.format(cifar10))
	if err != nil {
		return nil, nil, err
	}
	c.note(s)
	return s.datasets(0)
}

// Load100 reads CIFAR-100 from path: the archive cifar-100-binary.tar.gz, the directory
// cifar-100-binary, or a directory holding either. Images carry their fine labels (100
// classes), or their coarse labels (20 classes) with CoarseLabels; test is nil with
// TrainOnly.
func Load100(path string, opts ...Option) (train, test *datasets.Images, err error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	s, err := load(path, c.format(cifar100))
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkHierarchy(); err != nil {
		return nil, nil, err
	}
	c.note(s)
	if c.coarse {
		return s.datasets(0)
	}
	return s.datasets(1)
}

// split is the decoded content of one split's files: pixels image after image, and one
// label slice per label byte of the records.
type split struct {
	pixels []byte
	labels [][]byte
}

type sets struct {
	f           *format
	where       string
	train, test split
	counts      []int // records per file, in the order of f.train then f.test
}

func (s *sets) datasets(labelByte int) (train, test *datasets.Images, err error) {
	shape, classes := []int{3, 32, 32}, s.f.classes[labelByte]
	names := s.f.classNames[labelByte]
	if train, err = datasets.NewImages(shape, classes, s.train.pixels, s.train.labels[labelByte]); err != nil {
		return nil, nil, err
	}
	if train, err = train.WithClassNames(names); err != nil {
		return nil, nil, err
	}
	if len(s.f.test) == 0 { // TrainOnly
		return train, nil, nil
	}
	if test, err = datasets.NewImages(shape, classes, s.test.pixels, s.test.labels[labelByte]); err != nil {
		return nil, nil, err
	}
	if test, err = test.WithClassNames(names); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// checkHierarchy checks that CIFAR-100's fine classes nest in its coarse classes: every
// fine label comes with one coarse label throughout both splits.
func (s *sets) checkHierarchy() error {
	var coarseOf [100]int
	for i := range coarseOf {
		coarseOf[i] = -1
	}
	for _, sp := range []split{s.train, s.test} {
		for i, fine := range sp.labels[1] {
			coarse := int(sp.labels[0][i])
			if c := coarseOf[fine]; c >= 0 && c != coarse {
				return fmt.Errorf("cifar: %s: %w: fine label %d with coarse labels %d and %d", s.where, ErrLabelConflict, fine, c, coarse)
			}
			coarseOf[fine] = coarse
		}
	}
	return nil
}

// load finds the files of f at path and decodes them.
func load(p string, f *format) (*sets, error) {
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cifar: %s: %w; %s", p, fs.ErrNotExist, f.hint())
	}
	if err != nil {
		return nil, fmt.Errorf("cifar: %w", err)
	}
	if !st.IsDir() {
		return loadArchive(p, f)
	}
	if _, err := os.Stat(filepath.Join(p, f.train[0])); err == nil {
		return loadDir(p, f)
	}
	if st, err := os.Stat(filepath.Join(p, f.dir)); err == nil && st.IsDir() {
		return loadDir(filepath.Join(p, f.dir), f)
	}
	if st, err := os.Stat(filepath.Join(p, f.archive)); err == nil && !st.IsDir() {
		return loadArchive(filepath.Join(p, f.archive), f)
	}
	return nil, fmt.Errorf("cifar: %s: no %s files (%s, %s/ or %s): %w; %s",
		p, f.name, f.train[0], f.dir, f.archive, fs.ErrNotExist, f.hint())
}

func loadDir(dir string, f *format) (*sets, error) {
	s := &sets{f: f, where: dir}
	for _, part := range []struct {
		names []string
		dst   *split
	}{{f.train, &s.train}, {f.test, &s.test}} {
		// Size the buffers for all the split's files at once to avoid regrowing them.
		var records int
		for _, name := range part.names {
			p := filepath.Join(dir, name)
			st, err := os.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("cifar: %s: %w; %s", p, fs.ErrNotExist, f.hint())
			}
			if err != nil {
				return nil, fmt.Errorf("cifar: %w", err)
			}
			n, err := f.records(st.Size())
			if err != nil {
				return nil, fmt.Errorf("cifar: %s: %w", p, err)
			}
			records += n
		}
		part.dst.init(f, records)
		for _, name := range part.names {
			before := len(part.dst.labels[0])
			if err := decodeFile(filepath.Join(dir, name), f, part.dst); err != nil {
				return nil, err
			}
			s.counts = append(s.counts, len(part.dst.labels[0])-before)
		}
	}
	return s, nil
}

// init empties sp and makes room for n records of f.
func (sp *split) init(f *format, n int) {
	sp.pixels = make([]byte, 0, n*imageBytes)
	sp.labels = make([][]byte, len(f.classes))
	for k := range sp.labels {
		sp.labels[k] = make([]byte, 0, n)
	}
}

func decodeFile(name string, f *format, dst *split) error {
	file, err := safeio.Open(name)
	if err != nil {
		return fmt.Errorf("cifar: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return fmt.Errorf("cifar: %w", err)
	}
	if err := decodeRecords(bufio.NewReaderSize(file, 1<<16), st.Size(), f, dst); err != nil {
		return fmt.Errorf("cifar: %s: %w", name, err)
	}
	return nil
}

// loadArchive reads the .bin files of f from a .tar.gz archive in one pass.
func loadArchive(name string, f *format) (*sets, error) {
	file, err := safeio.Open(name)
	if err != nil {
		return nil, fmt.Errorf("cifar: %w", err)
	}
	defer file.Close()
	return readArchive(bufio.NewReaderSize(file, 1<<16), name, f)
}

func readArchive(r io.Reader, name string, f *format) (*sets, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("cifar: %s: %w (%w); %s", name, ErrNotArchive, err, f.hint())
	}
	defer zr.Close()
	members := make(map[string]*split) // base name → its records
	wanted := append(slices.Clone(f.train), f.test...)
	var records int64 // in the wanted members so far, as their headers claim
	tr := newTarReader(safeio.LimitReader(zr, maxArchive, "decompressed archive"))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cifar: %s: %w", name, archiveError(err))
		}
		base := path.Base(h.Name)
		if !h.Regular || !slices.Contains(wanted, base) {
			continue
		}
		if members[base] != nil {
			return nil, fmt.Errorf("cifar: %s: %s appears twice", name, base)
		}
		if records += h.Size / int64(f.recordBytes()); records > maxRecords {
			return nil, fmt.Errorf("cifar: %s: %w: the %s files of the archive hold more than %d records (the real ones hold 60,000); the archive is damaged or not %s",
				name, ErrRecordSize, f.name, maxRecords, f.name)
		}
		sp := new(split)
		sp.init(f, 0) // decodeRecords makes room once it has checked h.Size
		if err := decodeRecords(tr, h.Size, f, sp); err != nil {
			return nil, fmt.Errorf("cifar: %s: %s: %w", name, h.Name, archiveError(err))
		}
		members[base] = sp
	}
	s := &sets{f: f, where: name}
	for _, part := range []struct {
		names []string
		dst   *split
	}{{f.train, &s.train}, {f.test, &s.test}} {
		var total int
		for _, n := range part.names {
			if members[n] == nil {
				return nil, fmt.Errorf("cifar: %s: no %s/%s in the archive: %w; %s", name, f.dir, n, fs.ErrNotExist, f.hint())
			}
			total += len(members[n].labels[0])
		}
		part.dst.init(f, total)
		for _, n := range part.names {
			s.counts = append(s.counts, len(members[n].labels[0]))
			part.dst.pixels = append(part.dst.pixels, members[n].pixels...)
			for k := range part.dst.labels {
				part.dst.labels[k] = append(part.dst.labels[k], members[n].labels[k]...)
			}
			members[n] = nil // let the copy's source go
		}
	}
	return s, nil
}

// archiveError reports a stream cut short as ErrTruncated.
func archiveError(err error) error {
	if err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: archive incomplete", ErrTruncated)
	}
	return err
}

// notes says which files hold other than the official number of records: a file cut
// short at a record boundary (a sample of the data set, or a damaged copy) is read, and
// the user is told, "data_batch_1.bin: 1,017 of 10,000 records (a partial file)".
func (s *sets) notes() []string {
	var notes []string
	for i, name := range append(slices.Clone(s.f.train), s.f.test...) {
		if i >= len(s.counts) {
			break
		}
		n, full := s.counts[i], s.f.full[name]
		switch {
		case n < full:
			notes = append(notes, fmt.Sprintf("%s: %s of %s records (a partial file)", name, thousands(n), thousands(full)))
		case n > full:
			notes = append(notes, fmt.Sprintf("%s: %s records, more than the official file's %s", name, thousands(n), thousands(full)))
		}
	}
	return notes
}

// thousands writes n ≥ 0 with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// records returns the number of records in a file of size bytes.
func (f *format) records(size int64) (int, error) {
	rb := int64(f.recordBytes())
	if size <= 0 || size%rb != 0 {
		return 0, fmt.Errorf("%w: %d bytes, want a positive multiple of %d (%s records)", ErrRecordSize, size, rb, f.name)
	}
	if n := size / rb; n > maxRecords {
		return 0, fmt.Errorf("%w: %d records, more than the %d a %s file can hold", ErrRecordSize, n, maxRecords, f.name)
	}
	return int(size / rb), nil
}

// decodeRecords reads size bytes of records of f from r and appends their pixels and
// labels to dst.
func decodeRecords(r io.Reader, size int64, f *format, dst *split) error {
	n, err := f.records(size)
	if err != nil {
		return err
	}
	// size may be a tar header's claim: the buffers grow past one batch only as data
	// arrives.
	dst.pixels = slices.Grow(dst.pixels, min(n, batchRecords)*imageBytes)
	for k := range dst.labels {
		dst.labels[k] = slices.Grow(dst.labels[k], min(n, batchRecords))
	}
	var lab [2]byte
	for i := range n {
		if _, err := io.ReadFull(r, lab[:len(f.classes)]); err != nil {
			return recordError(err, i, n)
		}
		for k, c := range f.classes {
			if int(lab[k]) >= c {
				return fmt.Errorf("%w: record %d has %s %d, want 0 to %d", ErrLabelRange, i, f.labelNames[k], lab[k], c-1)
			}
			dst.labels[k] = append(dst.labels[k], lab[k])
		}
		at := len(dst.pixels)
		dst.pixels = slices.Grow(dst.pixels, imageBytes)[:at+imageBytes]
		if _, err := io.ReadFull(r, dst.pixels[at:]); err != nil {
			return recordError(err, i, n)
		}
	}
	return nil
}

func recordError(err error, i, n int) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: in record %d of %d", ErrTruncated, i, n)
	}
	return err
}
