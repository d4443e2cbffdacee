package mnist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/privtrain/privtrain/datasets"
)

// Errors of the IDX reader. They come wrapped with the file's path and the details of
// the fault; test for them with errors.Is.
var (
	ErrMagic         = errors.New("wrong magic number")
	ErrDimensions    = errors.New("bad dimensions")
	ErrTruncated     = datasets.ErrTruncated // the same error in both readers
	ErrTrailingData  = errors.New("data after the last item")
	ErrCountMismatch = errors.New("image and label counts differ")
	ErrLabelRange    = datasets.ErrLabelRange
)

// IDX magic numbers: two zero bytes, the element type (0x08: unsigned byte), the number
// of dimensions.
const (
	magicImages = 0x00000803
	magicLabels = 0x00000801
)

// numClasses is the number of classes of MNIST and of Fashion-MNIST.
const numClasses = 10

// Limits that keep a corrupt header from describing absurd data; real files are far
// inside them (MNIST: 70,000 images of 28×28). maxData bounds the data bytes of one
// file: the largest real IDX file, EMNIST ByClass's training images (697,932 of 28×28),
// holds 547 MB, so a header that claims more is refused before anything is allocated,
// and a hostile file costs at most this much memory.
const (
	maxSide  = 1 << 12
	maxItems = 1 << 30
	maxData  = 600 << 20
)

// decodeImages reads an IDX3 file of unsigned bytes (magic, then the number of images,
// rows and columns as big-endian uint32, then the pixels) and returns its dimensions and
// pixels. hint, when positive, is the expected number of pixel bytes, used only to size
// the buffer; without it the buffer grows as data arrives, so that a corrupt header
// cannot make the reader allocate more than the data it actually has.
func decodeImages(r io.Reader, hint int) (n, rows, cols int, pixels []byte, err error) {
	return decodeImagesMax(r, hint, 0)
}

// decodeImagesMax is decodeImages with a bound maxBytes > 0 on the pixel bytes (0, or
// more than maxData: maxData).
func decodeImagesMax(r io.Reader, hint, maxBytes int) (n, rows, cols int, pixels []byte, err error) {
	var h [16]byte
	if err := readHeader(r, h[:], magicImages, "3 dimensions"); err != nil {
		return 0, 0, 0, nil, err
	}
	n64 := binary.BigEndian.Uint32(h[4:])
	r64 := binary.BigEndian.Uint32(h[8:])
	c64 := binary.BigEndian.Uint32(h[12:])
	if n64 == 0 || n64 > maxItems || r64 == 0 || r64 > maxSide || c64 == 0 || c64 > maxSide {
		return 0, 0, 0, nil, fmt.Errorf("%w: %d images of %d×%d (want 1 to %d images, sides 1 to %d)",
			ErrDimensions, n64, r64, c64, maxItems, maxSide)
	}
	n, rows, cols = int(n64), int(r64), int(c64)
	if maxBytes <= 0 || maxBytes > maxData {
		maxBytes = maxData
	}
	if int64(n)*int64(rows)*int64(cols) > int64(maxBytes) {
		return 0, 0, 0, nil, fmt.Errorf("%w: %d images of %d×%d, more than %d bytes (the largest real IDX data set holds 547 MB); the file is damaged or not IDX image data", ErrDimensions, n, rows, cols, maxBytes)
	}
	pixels, err = readBody(r, n*rows*cols, hint)
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("%w (header: %d images of %d×%d)", err, n, rows, cols)
	}
	return n, rows, cols, pixels, nil
}

// decodeLabels reads an IDX1 file of unsigned bytes (magic, the number of labels as a
// big-endian uint32, the labels) and checks every label against the 10 classes.
func decodeLabels(r io.Reader, hint int) ([]byte, error) {
	var h [8]byte
	if err := readHeader(r, h[:], magicLabels, "1 dimension"); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[4:])
	if n == 0 || n > maxData {
		return nil, fmt.Errorf("%w: %d labels (want 1 to %d)", ErrDimensions, n, maxData)
	}
	labels, err := readBody(r, int(n), hint)
	if err != nil {
		return nil, fmt.Errorf("%w (header: %d labels)", err, n)
	}
	for i, l := range labels {
		if l >= numClasses {
			return nil, fmt.Errorf("%w: label %d of item %d, want 0 to %d", ErrLabelRange, l, i, numClasses-1)
		}
	}
	return labels, nil
}

// readHeader fills h, checking the magic number in its first four bytes before reading
// the rest, so that a wrong kind of file is reported as such even when it is short.
func readHeader(r io.Reader, h []byte, magic uint32, dims string) error {
	incomplete := func(err error) error {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%w: incomplete header", ErrTruncated)
		}
		return err
	}
	if _, err := io.ReadFull(r, h[:4]); err != nil {
		return incomplete(err)
	}
	if m := binary.BigEndian.Uint32(h); m != magic {
		return fmt.Errorf("%w: 0x%08x, want 0x%08x (IDX, unsigned bytes, %s)", ErrMagic, m, magic, dims)
	}
	if _, err := io.ReadFull(r, h[4:]); err != nil {
		return incomplete(err)
	}
	return nil
}

// readBody reads exactly size bytes, then makes sure the stream ends there. Reading to
// the end also makes a gzip reader verify its checksum. hint > 0 sizes the first
// allocation: the caller makes sure it is what the file can honestly hold (never a size
// the file merely claims), so that a file cut short costs no more than its data.
func readBody(r io.Reader, size, hint int) ([]byte, error) {
	const step = 1 << 20
	capacity := min(size, step)
	if hint > 0 {
		capacity = min(size, hint)
	}
	buf := make([]byte, 0, capacity)
	for len(buf) < size {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(size-len(buf), max(len(buf), step)))
		}
		k, err := io.ReadFull(r, buf[len(buf):min(size, cap(buf))])
		buf = buf[:len(buf)+k]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: %d of %d data bytes", ErrTruncated, len(buf), size)
		}
		if err != nil {
			return nil, err
		}
	}
	var extra [1]byte
	switch k, err := io.ReadFull(r, extra[:]); {
	case k > 0:
		return nil, fmt.Errorf("%w: more than the %d bytes the header announces", ErrTrailingData, size)
	case err != io.EOF:
		return nil, err
	}
	return buf, nil
}
