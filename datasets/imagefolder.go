package datasets

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // image.Decode reads JPEG
	_ "image/png"  // and PNG
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/privtrain/privtrain/internal/safeio"
)

// ErrImage reports an image folder that cannot be read as a dataset: a file that is not
// a PNG or JPEG image, images of different sizes, a class folder without images. The
// message names the file or folder.
var ErrImage = errors.New("bad image folder")

// ImageFolderOptions say how to read a folder of images; the zero value reads the images
// at their own (common) size with the channels the data needs.
type ImageFolderOptions struct {
	// Channels is 1 (grayscale) or 3 (RGB). 0 decides by the data: 1 when every pixel of
	// every image is gray (R = G = B in 8 bits), 3 otherwise. Colour images read as
	// grayscale get the luma of color.GrayModel (ITU-R BT.601: 0.299 R + 0.587 G + 0.114 B).
	Channels int
	// Width and Height, when set (both or neither), resize every image to this size by
	// area averaging (each output pixel is the mean of the input pixels it covers,
	// weighted by overlap). Zero: all images must have the same size, and an image of
	// another size is an error naming the file.
	Width, Height int
	// MaxPixels bounds width×height of one image before decoding (default 1<<24), so a
	// corrupt or hostile header cannot make the loader allocate gigabytes.
	MaxPixels int
}

// ImageFolder is the result of LoadImageFolder: the dataset and what its labels mean.
type ImageFolder struct {
	*Images
	ClassNames []string // class c is the subfolder ClassNames[c]
	Files      []string // example i was read from Files[i], relative to the folder
	// Skipped are the files of class folders that were not read because they are not
	// images (README.txt, Thumbs.db, …), relative to the folder, in class then name
	// order; callers should say how many were skipped.
	Skipped []string
}

var _ Dataset = (*ImageFolder)(nil)

// LoadImageFolder reads a folder of images with one subfolder per class, as
// torchvision's ImageFolder does:
//
//	dir/cat/001.png
//	dir/cat/002.jpg
//	dir/dog/xyz.jpeg
//
// Class c is the c-th subfolder in sorted (byte) order, here cat = 0, dog = 1. The
// regular files of a class folder are PNG or JPEG images, recognised by content; a file
// that is not one is skipped and listed in Skipped (README.txt, Thumbs.db), unless its
// name ends in .png, .jpg or .jpeg: an image that cannot be read is an error. Names
// starting with "." are skipped silently, and so are regular files directly in dir. Nested
// folders are an error. Examples are in class order, then file-name order. Pixel values
// are scaled as b/255, which depends on nothing but the format (alpha is dropped: pixels
// are taken as premultiplied, i.e. composed over black).
func LoadImageFolder(dir string, opts ImageFolderOptions) (*ImageFolder, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("datasets: %w: %s is a file, not a folder; want a folder holding one subfolder of PNG or JPEG images per class (DIR/cat/001.png, DIR/dog/002.jpg, …)", ErrImage, dir)
	}
	return loadImageFolder(os.DirFS(dir), dir, opts)
}

func loadImageFolder(fsys fs.FS, dir string, opts ImageFolderOptions) (*ImageFolder, error) {
	if opts.Channels != 0 && opts.Channels != 1 && opts.Channels != 3 {
		return nil, fmt.Errorf("datasets: %d channels: want 1 (gray), 3 (RGB) or 0 (by the data)", opts.Channels)
	}
	if (opts.Width == 0) != (opts.Height == 0) || opts.Width < 0 || opts.Height < 0 {
		return nil, fmt.Errorf("datasets: resize to %d×%d: give both width and height > 0, or neither", opts.Width, opts.Height)
	}
	if opts.MaxPixels <= 0 {
		opts.MaxPixels = DefaultMaxPixels
	}
	if opts.Width*opts.Height > opts.MaxPixels || opts.Width > opts.MaxPixels || opts.Height > opts.MaxPixels {
		return nil, fmt.Errorf("datasets: resize to %d×%d: more than %d pixels", opts.Width, opts.Height, opts.MaxPixels)
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("datasets: %s: %w", dir, err)
	}
	out := &ImageFolder{}
	// Each image is converted as soon as it is decoded, so that memory holds the
	// dataset's bytes, not every decoded image: RGB (CHW) unless Channels is 1; at the
	// end an all-gray RGB set keeps one plane when Channels is 0.
	w, h := opts.Width, opts.Height
	keep := opts.Channels
	if keep == 0 {
		keep = 3
	}
	gray := true // every pixel so far has R = G = B
	var pixels, labels []byte
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		class := len(out.ClassNames)
		if class == 256 {
			return nil, fmt.Errorf("datasets: %w: %s: more than 256 class folders", ErrImage, dir)
		}
		out.ClassNames = append(out.ClassNames, e.Name())
		files, err := fs.ReadDir(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("datasets: %s: %w", filepath.Join(dir, e.Name()), err)
		}
		n := 0
		for _, f := range files {
			name := path.Join(e.Name(), f.Name())
			where := filepath.Join(dir, filepath.FromSlash(name))
			if strings.HasPrefix(f.Name(), ".") {
				continue
			}
			if f.IsDir() {
				return nil, fmt.Errorf("datasets: %w: %s is a folder; want one level of class folders holding images", ErrImage, where)
			}
			if !f.Type().IsRegular() {
				continue
			}
			if !namedImage(f.Name()) {
				isImage, err := looksLikeImage(fsys, name, where)
				if err != nil {
					return nil, err
				}
				if !isImage {
					out.Skipped = append(out.Skipped, name)
					continue
				}
			}
			img, err := decodeImage(func() (io.ReadCloser, error) { return openRegular(fsys, name, where) }, where, opts.MaxPixels, nil)
			if err != nil {
				return nil, err
			}
			if w == 0 { // the first image sets the size
				w, h = img.Bounds().Dx(), img.Bounds().Dy()
			}
			if b := img.Bounds(); opts.Width == 0 && (b.Dx() != w || b.Dy() != h) {
				return nil, fmt.Errorf("datasets: %w: %s is %d×%d, but %s is %d×%d; resize the images to one size, or have them resized as they are read (ImageFolderOptions Width and Height; privtrain train -image-size WxH)",
					ErrImage, where, b.Dx(), b.Dy(), filepath.Join(dir, filepath.FromSlash(out.Files[0])), w, h)
			}
			at := len(pixels)
			pixels = appendCHW(pixels, resize(img, w, h), keep)
			if keep == 3 && gray {
				plane := w * h
				px := pixels[at:]
				for j := range plane {
					if px[j] != px[plane+j] || px[j] != px[2*plane+j] {
						gray = false
						break
					}
				}
			}
			labels = append(labels, byte(class))
			out.Files = append(out.Files, name)
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("datasets: %w: class folder %s has no images", ErrImage, filepath.Join(dir, e.Name()))
		}
	}
	if len(out.ClassNames) == 0 {
		return nil, fmt.Errorf("datasets: %w: %s has no class folders; want one subfolder of images per class", ErrImage, dir)
	}
	channels := keep
	if opts.Channels == 0 && gray { // keep the first of three equal planes
		plane := w * h
		for i := range labels {
			copy(pixels[i*plane:(i+1)*plane], pixels[3*i*plane:(3*i+1)*plane])
		}
		pixels = pixels[:len(labels)*plane]
		channels = 1
	}
	m, err := NewImages([]int{channels, h, w}, len(out.ClassNames), pixels, labels)
	if err != nil {
		return nil, err
	}
	out.Images = m
	return out, nil
}

// namedImage says whether a file's name ends in .png, .jpg or .jpeg (any case).
func namedImage(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".jpg", ".jpeg":
		return true
	}
	return false
}

// Magic numbers of the image formats an image folder reads.
var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xff, 0xd8, 0xff}
)

// looksLikeImage says whether the file name of fsys starts as a PNG or a JPEG image does.
func looksLikeImage(fsys fs.FS, name, where string) (bool, error) {
	f, err := openRegular(fsys, name, where)
	if err != nil {
		return false, fmt.Errorf("datasets: %w", err)
	}
	defer f.Close()
	head := make([]byte, len(pngMagic))
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return false, fmt.Errorf("datasets: %s: %w", where, err)
	}
	head = head[:n]
	return bytes.HasPrefix(head, pngMagic) || bytes.HasPrefix(head, jpegMagic), nil
}

// DefaultMaxPixels bounds width×height of one image where no other bound is given: 16.8
// megapixels, which decode to at most 128 MiB (16-bit RGBA).
const DefaultMaxPixels = 1 << 24

// DecodeImageFile decodes the PNG or JPEG image at path (a regular file), as the image
// folders of LoadImageFolder are read: the size its header claims is checked against
// maxPixels (0: DefaultMaxPixels) and, when fits is not nil, by fits (which may refuse
// it, e.g. for not being the size a model takes) before any pixel is decoded, so that a
// small file claiming a huge image costs an error, not gigabytes. Errors name path and
// wrap ErrImage (a refusal of fits is returned as it is).
func DecodeImageFile(path string, maxPixels int, fits func(w, h int) error) (image.Image, error) {
	return decodeImage(func() (io.ReadCloser, error) { return safeio.Open(path) }, path, maxPixels, fits)
}

// decodeImage opens the image twice, to read the header and then, if its size passes,
// the pixels: the decoders stream, so neither the whole file nor more than the claimed
// image is ever held.
func decodeImage(open func() (io.ReadCloser, error), where string, maxPixels int, fits func(w, h int) error) (image.Image, error) {
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	f, err := open()
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	cfg, format, err := image.DecodeConfig(bufio.NewReader(f))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("datasets: %w: %s: not a PNG or JPEG image: %v", ErrImage, where, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxPixels/max(cfg.Height, 1) {
		return nil, fmt.Errorf("datasets: %w: %s: %s of %d×%d pixels; at most %d pixels per image", ErrImage, where, format, cfg.Width, cfg.Height, maxPixels)
	}
	if fits != nil {
		if err := fits(cfg.Width, cfg.Height); err != nil {
			return nil, err
		}
	}
	if f, err = open(); err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	defer f.Close()
	img, _, err := image.Decode(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("datasets: %w: %s: %s: %v", ErrImage, where, format, err)
	}
	if b := img.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height { // the file changed between the two reads
		return nil, fmt.Errorf("datasets: %w: %s: the image changed while it was read", ErrImage, where)
	}
	return img, nil
}

// openRegular opens name in fsys, refusing what is not a regular file.
func openRegular(fsys fs.FS, name, where string) (io.ReadCloser, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = safeio.CheckRegular(st, where)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// appendCHW appends img's pixels, channel after channel (CHW), as bytes.
func appendCHW(dst []byte, img *image.RGBA64, channels int) []byte {
	b := img.Bounds()
	if channels == 1 {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				g := color.GrayModel.Convert(img.RGBA64At(x, y)).(color.Gray)
				dst = append(dst, g.Y)
			}
		}
		return dst
	}
	for c := range 3 {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				p := img.RGBA64At(x, y)
				v := [3]uint16{p.R, p.G, p.B}[c]
				dst = append(dst, byte(v>>8))
			}
		}
	}
	return dst
}

// resize returns img at w×h by area averaging in 16-bit premultiplied RGBA; at its own
// size it is a copy.
func resize(img image.Image, w, h int) *image.RGBA64 {
	src := img.Bounds()
	out := image.NewRGBA64(image.Rect(0, 0, w, h))
	sw, sh := src.Dx(), src.Dy()
	if sw == w && sh == h {
		for y := range h {
			for x := range w {
				r, g, b, a := img.At(src.Min.X+x, src.Min.Y+y).RGBA()
				out.SetRGBA64(x, y, color.RGBA64{uint16(r), uint16(g), uint16(b), uint16(a)})
			}
		}
		return out
	}
	// Output pixel (x, y) covers [x·sw/w, (x+1)·sw/w) × [y·sh/h, (y+1)·sh/h) of the
	// source, in units of 1/(w·h) source pixels so that every bound is an integer.
	for y := range h {
		y0, y1 := y*sh, (y+1)*sh // in units of 1/h source rows
		for x := range w {
			x0, x1 := x*sw, (x+1)*sw // in units of 1/w source columns
			var sum [4]float64
			var area float64
			for sy := y0 / h; sy*h < y1; sy++ {
				wy := float64(min(y1, (sy+1)*h) - max(y0, sy*h))
				for sx := x0 / w; sx*w < x1; sx++ {
					wx := float64(min(x1, (sx+1)*w) - max(x0, sx*w))
					r, g, b, a := img.At(src.Min.X+sx, src.Min.Y+sy).RGBA()
					wt := wx * wy
					sum[0] += wt * float64(r)
					sum[1] += wt * float64(g)
					sum[2] += wt * float64(b)
					sum[3] += wt * float64(a)
					area += wt
				}
			}
			var c [4]uint16
			for k := range c {
				c[k] = uint16(min(sum[k]/area+0.5, 65535))
			}
			out.SetRGBA64(x, y, color.RGBA64{c[0], c[1], c[2], c[3]})
		}
	}
	return out
}

// ImageCHW converts img as LoadImageFolder does with Width w and Height h: resized by
// area averaging (a copy at its own size), then channels (1: gray, 3: RGB) planes of
// h×w bytes, CHW. Dividing each byte by 255 gives the values a model trained on the
// folder saw; cmd/predict uses it for new images.
func ImageCHW(img image.Image, channels, w, h int) []byte {
	return appendCHW(nil, resize(img, w, h), channels)
}
