package cli

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// TestImageFolderSkipsNonImages: -dataset images:DIR with a README.txt and a Thumbs.db
// among the images trains on the images, with one warning line that counts and names
// the skipped files (issue 41: the README stopped the run); images of two sizes are an
// error that names the flag -image-size WxH.
func TestImageFolderSkipsNonImages(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gray := func(w, h int, v byte) []byte {
		img := image.NewGray(image.Rect(0, 0, w, h))
		for i := range img.Pix {
			img.Pix[i] = v + byte(i)
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for i := range 10 {
		write(fmt.Sprintf("cat/%d.png", i), gray(4, 4, byte(i)))
		write(fmt.Sprintf("dog/%d.png", i), gray(4, 4, byte(100+i)))
	}
	write("cat/README.txt", []byte("cats, photographed in 2024"))
	write("dog/Thumbs.db", []byte{0xd0, 0xcf, 0x11, 0xe0})
	o := DataFlags{Header: "auto", TestFraction: 0.2, SplitSeed: 1, Labels: "fine"}
	train, test, _, notes, err := LoadData("images:"+dir, "", &o)
	if err != nil {
		t.Fatal(err)
	}
	if n := train.Len() + test.Len(); n != 20 {
		t.Errorf("%d examples; want the 20 images", n)
	}
	want := "warning: skipped 2 files that are not a PNG or JPEG image (" + filepath.Join("cat", "README.txt") + ", " + filepath.Join("dog", "Thumbs.db") + ")"
	want = strings.ReplaceAll(want, string(filepath.Separator), "/") // the folder's names, as datasets lists them
	if i := slices.Index(notes, want); i < 0 || slices.IndexFunc(notes, func(s string) bool { return strings.Contains(s, "skipped") }) != i ||
		slices.ContainsFunc(notes[i+1:], func(s string) bool { return strings.Contains(s, "skipped") }) {
		t.Errorf("notes %q; want one %q", notes, want)
	}

	write("dog/big.png", gray(5, 4, 0))
	_, _, _, _, err = LoadData("images:"+dir, "", &o)
	if !exit.IsUsage(err) || !strings.Contains(err.Error(), "-image-size WxH") || strings.Contains(err.Error(), "\n") {
		t.Errorf("mixed sizes: %v; want a one-line usage error naming -image-size WxH", err)
	}
}
