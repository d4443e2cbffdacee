package datasets

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func pngBytes(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// grayImage is a w×h gray image whose pixel (x, y) is v(x, y).
func grayImage(w, h int, v func(x, y int) byte) *image.Gray {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			g.SetGray(x, y, color.Gray{v(x, y)})
		}
	}
	return g
}

func writeFiles(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Classes are the sorted subfolder names; examples come in class then file order;
// gray PNG pixels b arrive as b/255 in one channel; dotfiles and files in the root are
// skipped.
func TestLoadImageFolderGray(t *testing.T) {
	dir := writeFiles(t, map[string][]byte{
		"zebra/b.png":   pngBytes(t, grayImage(3, 2, func(x, y int) byte { return byte(10*x + y) })),
		"zebra/a.png":   pngBytes(t, grayImage(3, 2, func(x, y int) byte { return 255 })),
		"ant/x.png":     pngBytes(t, grayImage(3, 2, func(x, y int) byte { return byte(100 + x) })),
		"ant/.DS_Store": []byte("junk"),
		"README.txt":    []byte("not an image, not in a class folder"),
	})
	f, err := LoadImageFolder(dir, ImageFolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.ClassNames, []string{"ant", "zebra"}) || !slices.Equal(f.Files, []string{"ant/x.png", "zebra/a.png", "zebra/b.png"}) {
		t.Fatalf("classes %v files %v", f.ClassNames, f.Files)
	}
	if !slices.Equal(f.Shape(), []int{1, 2, 3}) || !slices.Equal(Labels(f), []int{0, 1, 1}) {
		t.Fatalf("shape %v labels %v", f.Shape(), Labels(f))
	}
	x := make([]float32, 6)
	f.Example(2, x)
	want := []float32{0, 10, 20, 1, 11, 21} // row-major: y = 0 then y = 1
	for j := range want {
		if x[j] != want[j]/255 {
			t.Errorf("pixel %d = %v, want %v/255", j, x[j], want[j])
		}
	}
}

// A colour image makes the folder RGB (3 channels, CHW); Channels 1 forces gray by the
// BT.601 luma; a JPEG decodes too.
func TestLoadImageFolderRGB(t *testing.T) {
	rgb := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	rgb.SetNRGBA(0, 0, color.NRGBA{200, 100, 50, 255})
	rgb.SetNRGBA(1, 0, color.NRGBA{0, 0, 255, 255})
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, grayImage(2, 1, func(x, y int) byte { return 128 }), &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string][]byte{
		"a/rgb.png":  pngBytes(t, rgb),
		"b/gray.jpg": jb.Bytes(),
	})
	f, err := LoadImageFolder(dir, ImageFolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Shape(), []int{3, 1, 2}) {
		t.Fatalf("shape %v, want 3×1×2", f.Shape())
	}
	x := make([]float32, 6)
	f.Example(0, x)
	for j, want := range []float32{200, 0, 100, 0, 50, 255} { // R plane, G plane, B plane
		if x[j] != want/255 {
			t.Errorf("value %d = %v, want %v/255", j, x[j]*255, want)
		}
	}
	f.Example(1, x)
	for j := range x {
		if d := x[j]*255 - 128; d > 1 || d < -1 { // a gray JPEG at quality 100
			t.Errorf("jpeg value %d = %v, want about 128", j, x[j]*255)
		}
	}
	g, err := LoadImageFolder(dir, ImageFolderOptions{Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float32, 2)
	g.Example(0, y)
	// 0.299·200 + 0.587·100 + 0.114·50 = 124.2 → 124; pure blue: 0.114·255 = 29.07 → 29
	if y[0]*255 != 124 || y[1]*255 != 29 {
		t.Errorf("gray of the colour image = %v, want [124 29]", []float32{y[0] * 255, y[1] * 255})
	}
}

// Images of another size are an error naming the file, or resized by area averaging
// when asked: 3 pixels onto 2 give (p0 + p1/2)/1.5 and (p1/2 + p2)/1.5.
func TestLoadImageFolderSizes(t *testing.T) {
	dir := writeFiles(t, map[string][]byte{
		"a/1.png": pngBytes(t, grayImage(2, 2, func(x, y int) byte { return 0 })),
		"a/2.png": pngBytes(t, grayImage(3, 1, func(x, y int) byte { return []byte{0, 90, 180}[x] })),
	})
	_, err := LoadImageFolder(dir, ImageFolderOptions{})
	if !errors.Is(err, ErrImage) || !strings.Contains(err.Error(), filepath.Join(dir, "a", "2.png")) || !strings.Contains(err.Error(), "3×1") {
		t.Errorf("different sizes: %v", err)
	}
	f, err := LoadImageFolder(dir, ImageFolderOptions{Width: 2, Height: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2)
	f.Example(1, x)
	if x[0]*255 != 30 || x[1]*255 != 150 {
		t.Errorf("3→2 resize = %v, want [30 150]", []float32{x[0] * 255, x[1] * 255})
	}
	f.Example(0, x) // 2×2 of zeros to 2×1: zeros
	if x[0] != 0 || x[1] != 0 {
		t.Errorf("resized zeros = %v", x)
	}
	// Upscaling repeats pixels: 1×1 of 77 to 2×2.
	dir = writeFiles(t, map[string][]byte{"a/1.png": pngBytes(t, grayImage(1, 1, func(x, y int) byte { return 77 }))})
	if f, err = LoadImageFolder(dir, ImageFolderOptions{Width: 2, Height: 2}); err != nil {
		t.Fatal(err)
	}
	x = make([]float32, 4)
	f.Example(0, x)
	for _, v := range x {
		if v*255 != 77 {
			t.Errorf("1→2 upscale = %v", x)
		}
	}
}

// TestLoadImageFolderSkipsNonImages: files of a class folder that are not images
// (README.txt, Thumbs.db, a PNG's content under any other name is one) are skipped and
// listed, as torchvision's ImageFolder skips them; an image under a name without an
// image extension is read as before.
func TestLoadImageFolderSkipsNonImages(t *testing.T) {
	ok := pngBytes(t, grayImage(2, 2, func(x, y int) byte { return 1 }))
	dir := writeFiles(t, map[string][]byte{
		"a/x.png":       ok,
		"a/README.txt":  []byte("photos of a"),
		"a/Thumbs.db":   {0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1},
		"b/y":           ok, // a PNG without an extension: read
		"b/empty":       nil,
		"b/.DS_Store":   []byte("Bud1"), // hidden: skipped silently, as before
		"b/z.jpeg.part": []byte("partial download"),
	})
	f, err := LoadImageFolder(dir, ImageFolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Files, []string{"a/x.png", "b/y"}) || f.Len() != 2 {
		t.Errorf("files %v (%d examples); want a/x.png and b/y", f.Files, f.Len())
	}
	if want := []string{"a/README.txt", "a/Thumbs.db", "b/empty", "b/z.jpeg.part"}; !slices.Equal(f.Skipped, want) {
		t.Errorf("skipped %v; want %v", f.Skipped, want)
	}
}

func TestLoadImageFolderErrors(t *testing.T) {
	ok := pngBytes(t, grayImage(2, 2, func(x, y int) byte { return 1 }))
	big := pngBytes(t, grayImage(300, 300, func(x, y int) byte { return 1 }))
	for _, tc := range []struct {
		files map[string][]byte
		opts  ImageFolderOptions
		want  string
	}{
		{map[string][]byte{"x.png": ok}, ImageFolderOptions{}, "no class folders"},
		{map[string][]byte{"a/x.png": ok, "b/notes.png": []byte("hello")}, ImageFolderOptions{}, filepath.Join("b", "notes.png") + ": not a PNG or JPEG"},
		{map[string][]byte{"a/x.png": ok, "b/notes.txt": []byte("hello")}, ImageFolderOptions{}, string(filepath.Separator) + "b has no images"},
		{map[string][]byte{"a/x.png": ok, "a/y.png": pngBytes(t, grayImage(3, 2, func(x, y int) byte { return 1 }))}, ImageFolderOptions{}, filepath.Join("a", "x.png") + " is 2×2; resize the images to one size, or have them resized as they are read (ImageFolderOptions Width and Height; privtrain train -image-size WxH)"},
		{map[string][]byte{"a/x.png": ok[:40]}, ImageFolderOptions{}, filepath.Join("a", "x.png")},
		{map[string][]byte{"a/x.png": ok, "b/.hidden": ok}, ImageFolderOptions{}, "has no images"},
		{map[string][]byte{"a/x.png": ok, "a/sub/y.png": ok}, ImageFolderOptions{}, "is a folder"},
		{map[string][]byte{"a/x.png": big}, ImageFolderOptions{MaxPixels: 1000}, "at most 1000 pixels"},
		{map[string][]byte{"a/x.png": ok}, ImageFolderOptions{Channels: 2}, "2 channels"},
		{map[string][]byte{"a/x.png": ok}, ImageFolderOptions{Width: 3}, "both width and height"},
	} {
		_, err := LoadImageFolder(writeFiles(t, tc.files), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.opts, err, tc.want)
		}
	}
	if _, err := LoadImageFolder(filepath.Join(t.TempDir(), "missing"), ImageFolderOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing folder: %v", err)
	}
}

// FuzzImageFolder: a folder whose second class holds one fuzzed file loads or fails with
// ErrImage, never panics, and a loaded dataset has 8-bit values and valid labels.
func FuzzImageFolder(f *testing.F) {
	f.Add(pngBytes(f, grayImage(2, 2, func(x, y int) byte { return byte(x) })))
	f.Add(pngBytes(f, grayImage(3, 2, func(x, y int) byte { return 9 })))
	rgb := image.NewRGBA(image.Rect(0, 0, 2, 2))
	rgb.Set(1, 1, color.RGBA{1, 2, 3, 4})
	f.Add(pngBytes(f, rgb))
	var jb bytes.Buffer
	jpeg.Encode(&jb, rgb, nil)
	f.Add(jb.Bytes())
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte{0xff, 0xd8, 0xff})
	ref := pngBytes(f, grayImage(2, 2, func(x, y int) byte { return 200 }))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"a/ref.png": {Data: ref}, "b/fuzz.png": {Data: data}}
		for _, opts := range []ImageFolderOptions{{MaxPixels: 1 << 16}, {Width: 2, Height: 2, MaxPixels: 1 << 16}} {
			m, err := loadImageFolder(fsys, "fuzz", opts)
			if err != nil {
				if !errors.Is(err, ErrImage) {
					t.Fatalf("error %v does not wrap ErrImage", err)
				}
				continue
			}
			if m.Len() != 2 || m.NumClasses() != 2 || len(m.Shape()) != 3 || m.Shape()[1] != 2 || m.Shape()[2] != 2 {
				t.Fatalf("len %d classes %d shape %v", m.Len(), m.NumClasses(), m.Shape())
			}
		}
	})
}

// A file given as the folder is named as a file, with what the folder must hold.
func TestImageFolderIsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cat.png")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadImageFolder(p, ImageFolderOptions{})
	if !errors.Is(err, ErrImage) || !strings.Contains(err.Error(), p+" is a file, not a folder") {
		t.Errorf("%v", err)
	}
}
