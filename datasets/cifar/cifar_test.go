package cifar

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/privtrain/privtrain/datasets"
)

// The tests write files in the binary format described on
// https://www.cs.toronto.edu/~kriz/cifar.html ("Binary version"), with their own code.

// image returns the 3,072 pixel bytes of synthetic image g: byte j is (31g + 7j) mod 256,
// so every image and every position is recognisable.
func image(g int) []byte {
	px := make([]byte, 3072)
	for j := range px {
		px[j] = byte(31*g + 7*j)
	}
	return px
}

// batch10 returns n CIFAR-10 records of images first, first+1, …, label g mod 10.
func batch10(first, n int) []byte {
	var b []byte
	for g := first; g < first+n; g++ {
		b = append(b, byte(g%10))
		b = append(b, image(g)...)
	}
	return b
}

// batch100 returns n CIFAR-100 records, fine label g mod 100 and coarse label fine/5 (a
// nesting like the real one: 5 fine classes per superclass).
func batch100(first, n int) []byte {
	var b []byte
	for g := first; g < first+n; g++ {
		fine := g % 100
		b = append(b, byte(fine/5), byte(fine))
		b = append(b, image(g)...)
	}
	return b
}

// cifar10Files returns the six files of a small CIFAR-10: batches of 4 records, test 3.
func cifar10Files() map[string][]byte {
	files := map[string][]byte{"test_batch.bin": batch10(1000, 3)}
	for i := range 5 {
		files[cifar10.train[i]] = batch10(4*i, 4)
	}
	return files
}

func writeDir(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tarGz packs files under dir/ as the real archives do, with a directory entry and a
// text file that the reader must skip.
func tarGz(t testing.TB, dir string, files map[string][]byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755}))
	extra := []byte("airplane\nautomobile\n")
	must(tw.WriteHeader(&tar.Header{Name: dir + "/batches.meta.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(extra))}))
	_, err := tw.Write(extra)
	must(err)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		must(tw.WriteHeader(&tar.Header{Name: dir + "/" + n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n]))}))
		_, err := tw.Write(files[n])
		must(err)
	}
	must(tw.Close())
	must(zw.Close())
	return b.Bytes()
}

// check compares a dataset with the synthetic images first…first+n-1.
func check(t *testing.T, what string, m *datasets.Images, first, n, classes int, label func(g int) int) {
	t.Helper()
	if m.Len() != n || m.NumClasses() != classes || !slices.Equal(m.Shape(), []int{3, 32, 32}) {
		t.Fatalf("%s: Len %d NumClasses %d Shape %v, want %d %d [3 32 32]", what, m.Len(), m.NumClasses(), m.Shape(), n, classes)
	}
	x := make([]float32, 3072)
	for i := range n {
		g := first + i
		if l := m.Example(i, x); l != label(g) {
			t.Errorf("%s: example %d label %d, want %d", what, i, l, label(g))
		}
		px := image(g)
		for j, v := range x { // the file's order is already C×H×W
			if v != float32(px[j])/255 {
				t.Fatalf("%s: example %d value %d = %v, want %v", what, i, j, v, float32(px[j])/255)
			}
		}
	}
}

func TestLoad10(t *testing.T) {
	files := cifar10Files()
	root := t.TempDir()
	writeDir(t, filepath.Join(root, "extracted", cifar10.dir), files)
	writeDir(t, filepath.Join(root, "packed"), map[string][]byte{cifar10.archive: tarGz(t, cifar10.dir, files)})
	for _, path := range []string{
		filepath.Join(root, "extracted", cifar10.dir),  // the .bin directory
		filepath.Join(root, "extracted"),               // its parent
		filepath.Join(root, "packed", cifar10.archive), // the archive
		filepath.Join(root, "packed"),                  // the archive's directory
	} {
		train, test, err := Load10(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		label := func(g int) int { return g % 10 }
		check(t, path+" train", train, 0, 20, 10, label) // batches 1…5 in order
		check(t, path+" test", test, 1000, 3, 10, label)
	}
}

func TestLoad100(t *testing.T) {
	files := map[string][]byte{"train.bin": batch100(0, 250), "test.bin": batch100(5000, 7)}
	root := t.TempDir()
	writeDir(t, filepath.Join(root, cifar100.dir), files)
	archive := filepath.Join(root, cifar100.archive)
	writeDir(t, root, map[string][]byte{cifar100.archive: tarGz(t, cifar100.dir, files)})
	fine := func(g int) int { return g % 100 }
	coarse := func(g int) int { return g % 100 / 5 }
	for _, path := range []string{filepath.Join(root, cifar100.dir), root, archive} {
		train, test, err := Load100(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		check(t, path+" train", train, 0, 250, 100, fine)
		check(t, path+" test", test, 5000, 7, 100, fine)
		train, test, err = Load100(path, CoarseLabels())
		if err != nil {
			t.Fatal(err)
		}
		check(t, path+" coarse train", train, 0, 250, 20, coarse)
		check(t, path+" coarse test", test, 5000, 7, 20, coarse)
	}
}

func TestLoadErrors(t *testing.T) {
	with := func(name string, data []byte) map[string][]byte {
		f := cifar10Files()
		f[name] = data
		return f
	}
	without := func(name string) map[string][]byte {
		f := cifar10Files()
		delete(f, name)
		return f
	}
	rec10 := func(label byte) []byte { return append([]byte{label}, image(0)...) }
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  error
		text  string
	}{
		{"one byte short", with("data_batch_3.bin", batch10(0, 4)[:4*3073-1]), ErrRecordSize, "data_batch_3.bin"},
		{"one byte extra", with("test_batch.bin", append(batch10(0, 3), 0)), ErrRecordSize, "9220 bytes"},
		{"empty batch", with("data_batch_1.bin", nil), ErrRecordSize, "0 bytes"},
		{"CIFAR-100 records", with("data_batch_2.bin", batch100(0, 3)), ErrRecordSize, "data_batch_2.bin"},
		{"label 10", with("data_batch_5.bin", append(batch10(0, 3), rec10(10)...)), ErrLabelRange, "record 3 has label 10"},
		{"label 255", with("test_batch.bin", rec10(255)), ErrLabelRange, "test_batch.bin"},
		{"missing batch", without("data_batch_2.bin"), fs.ErrNotExist, "data_batch_2.bin"},
		{"missing test", without("test_batch.bin"), fs.ErrNotExist, "test_batch.bin"},
	} {
		for _, packed := range []bool{false, true} {
			path := filepath.Join(t.TempDir(), cifar10.dir)
			if packed {
				path = filepath.Join(t.TempDir(), cifar10.archive)
				writeDir(t, filepath.Dir(path), map[string][]byte{cifar10.archive: tarGz(t, cifar10.dir, tc.files)})
			} else {
				writeDir(t, path, tc.files)
			}
			_, _, err := Load10(path)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%s (archive %v): error %v, want %v mentioning %q", tc.name, packed, err, tc.want, tc.text)
			}
		}
	}
}

func TestLoad100Errors(t *testing.T) {
	rec := func(coarse, fine byte) []byte { return append([]byte{coarse, fine}, image(0)...) }
	good := batch100(0, 10)
	for _, tc := range []struct {
		name        string
		train, test []byte
		want        error
		text        string
	}{
		{"coarse 20", append(slices.Clone(good), rec(20, 3)...), good, ErrLabelRange, "coarse label 20"},
		{"fine 100", good, rec(1, 100), ErrLabelRange, "fine label 100"},
		// fine class 3 is in coarse class 0 in the training file (3/5 = 0)
		{"fine class in two superclasses", good, rec(4, 3), ErrLabelConflict, "fine label 3"},
		{"CIFAR-10 records", batch10(0, 2), good, ErrRecordSize, "train.bin"},
	} {
		dir := filepath.Join(t.TempDir(), cifar100.dir)
		writeDir(t, dir, map[string][]byte{"train.bin": tc.train, "test.bin": tc.test})
		_, _, err := Load100(dir)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: error %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
	}
}

func TestLoadArchiveFaults(t *testing.T) {
	files := cifar10Files()
	good := tarGz(t, cifar10.dir, files)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"cut in the middle", good[:len(good)/2], ErrTruncated},
		{"cut in a header", good[:100], ErrTruncated},
		{"not gzip", []byte("PK\x03\x04 a zip file"), gzip.ErrHeader},
	} {
		path := filepath.Join(dir, tc.name+".tar.gz")
		writeDir(t, dir, map[string][]byte{filepath.Base(path): tc.data})
		_, _, err := Load10(path)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want %v naming the archive", tc.name, err, tc.want)
		}
	}
	// A tar header announcing more records than a CIFAR file holds is refused before
	// anything is allocated for it.
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: cifar10.dir + "/data_batch_1.bin", Typeflag: tar.TypeReg, Size: 3073 << 20})
	tw.Flush()
	zw.Close()
	_, err := readArchive(&b, "huge.tar.gz", cifar10)
	if !errors.Is(err, ErrRecordSize) {
		t.Errorf("huge member: error %v, want ErrRecordSize", err)
	}
}

func TestLoadMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing-here")
	_, _, err := Load10(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) ||
		!strings.Contains(err.Error(), "https://www.cs.toronto.edu/~kriz/cifar.html") {
		t.Errorf("missing path: %v", err)
	}
	empty := t.TempDir()
	_, _, err = Load100(empty)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "cifar-100-binary.tar.gz") {
		t.Errorf("empty directory: %v", err)
	}
}

// BenchmarkLoad10 reads a synthetic CIFAR-10 of the real size (5 × 10,000 + 10,000
// records, 184 MB) from a directory and from a .tar.gz.
func BenchmarkLoad10(b *testing.B) {
	files := map[string][]byte{"test_batch.bin": batch10(0, 10000)}
	for _, n := range cifar10.train {
		files[n] = files["test_batch.bin"]
	}
	root := b.TempDir()
	dir := filepath.Join(root, cifar10.dir)
	os.MkdirAll(dir, 0o755)
	for n, data := range files {
		os.WriteFile(filepath.Join(dir, n), data, 0o644)
	}
	archive := filepath.Join(root, cifar10.archive)
	os.WriteFile(archive, tarGz(b, cifar10.dir, files), 0o644)
	for _, p := range []struct{ name, path string }{{"dir", dir}, {"tar.gz", archive}} {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(6 * 10000 * 3073)
			for b.Loop() {
				if _, _, err := Load10(p.path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTrainOnly: with TrainOnly the test file is not read: a directory without it, or an
// archive or a directory whose test file is damaged (not a whole number of records),
// gives the training images and a nil test set, where the loaders without the option
// fail naming the test file.
func TestTrainOnly(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name     string
		f        *format
		files    map[string][]byte
		load     func(path string, opts ...Option) (*datasets.Images, *datasets.Images, error)
		n, class int
		label    func(g int) int
	}{
		{"cifar10", cifar10, cifar10Files(), Load10, 20, 10, func(g int) int { return g % 10 }},
		{"cifar100", cifar100, map[string][]byte{"train.bin": batch100(0, 250), "test.bin": batch100(5000, 7)}, Load100, 250, 100, func(g int) int { return g % 100 }},
	} {
		testFile := tc.f.test[0]
		missing, damaged := maps.Clone(tc.files), maps.Clone(tc.files)
		delete(missing, testFile)
		damaged[testFile] = damaged[testFile][:len(damaged[testFile])-1]
		dirMissing, dirDamaged := filepath.Join(root, tc.name, "missing"), filepath.Join(root, tc.name, "damaged")
		writeDir(t, dirMissing, missing)
		writeDir(t, dirDamaged, damaged)
		archive := filepath.Join(root, tc.name, tc.f.archive)
		writeDir(t, filepath.Dir(archive), map[string][]byte{tc.f.archive: tarGz(t, tc.f.dir, damaged)})
		for _, path := range []string{dirMissing, dirDamaged, archive} {
			train, test, err := tc.load(path, TrainOnly())
			if err != nil {
				t.Fatalf("%s TrainOnly: %v", path, err)
			}
			if test != nil {
				t.Errorf("%s TrainOnly: test set of %d images, want nil", path, test.Len())
			}
			check(t, path+" train", train, 0, tc.n, tc.class, tc.label)
			_, _, err = tc.load(path)
			want := ErrRecordSize
			if path == dirMissing {
				want = fs.ErrNotExist
			}
			if !errors.Is(err, want) || !strings.Contains(err.Error(), testFile) {
				t.Errorf("%s without TrainOnly: %v; want %v naming %s", path, err, want, testFile)
			}
		}
	}
}
