package datasets

import (
	"errors"
	"fmt"
)

// byteToUnit maps a stored pixel byte to its value in [0,1]; Example is a lookup per
// pixel instead of a division.
var byteToUnit = func() (t [256]float32) {
	for b := range t {
		t[b] = float32(b) / 255
	}
	return t
}()

// Images is an in-memory Dataset of 8-bit images with labels below 256, the form in
// which MNIST, Fashion-MNIST and CIFAR are distributed. It keeps the bytes as they are
// (a quarter of the memory of float32) and scales them to [0,1] as b/255 in Example.
//
// An Images is immutable once built, so one value can be shared freely, also between
// goroutines.
type Images struct {
	shape      []int
	size       int // product of shape
	numClasses int
	pixels     []byte // Len()×size bytes, example after example
	labels     []byte
	classNames []string // nil: unnamed (WithClassNames)
}

// NewImages returns a dataset of len(labels) examples of the given shape, whose pixels
// are laid out example after example, each row-major in shape's order. It takes
// ownership of pixels and labels: the caller must not modify them afterwards.
//
// It reports an error when a dimension is not positive, numClasses is not in [1, 256],
// len(pixels) is not len(labels) times the product of shape, or a label is not below
// numClasses.
func NewImages(shape []int, numClasses int, pixels, labels []byte) (*Images, error) {
	if len(shape) == 0 {
		return nil, errors.New("datasets: empty example shape")
	}
	size := 1
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("datasets: example shape %v has a dimension ≤ 0", shape)
		}
		if size > int(^uint(0)>>1)/d {
			return nil, fmt.Errorf("datasets: example shape %v is too large", shape)
		}
		size *= d
	}
	if numClasses < 1 || numClasses > 256 {
		return nil, fmt.Errorf("datasets: %d classes; byte labels allow 1 to 256", numClasses)
	}
	if len(pixels)%size != 0 || len(pixels)/size != len(labels) {
		return nil, fmt.Errorf("datasets: %d pixel bytes for %d examples of shape %v (want %d per example)",
			len(pixels), len(labels), shape, size)
	}
	for i, l := range labels {
		if int(l) >= numClasses {
			return nil, fmt.Errorf("datasets: example %d has label %d, want < %d", i, l, numClasses)
		}
	}
	return &Images{
		shape:      append([]int(nil), shape...),
		size:       size,
		numClasses: numClasses,
		pixels:     pixels,
		labels:     labels,
	}, nil
}

var (
	_ Dataset = (*Images)(nil)
	_ Labeler = (*Images)(nil)
)

// Len returns the number of examples.
func (m *Images) Len() int { return len(m.labels) }

// Shape returns a copy of the per-example shape.
func (m *Images) Shape() []int { return append([]int(nil), m.shape...) }

// NumClasses returns the number of classes.
func (m *Images) NumClasses() int { return m.numClasses }

// Label returns the label of example i.
func (m *Images) Label(i int) int { return int(m.labels[i]) }

// Example writes example i scaled to [0,1] into dst and returns its label; see Dataset.
func (m *Images) Example(i int, dst []float32) int {
	if len(dst) != m.size {
		panic(fmt.Sprintf("datasets: Example buffer has %d values, want %d", len(dst), m.size))
	}
	if i < 0 || i >= len(m.labels) {
		panic(fmt.Sprintf("datasets: example index %d out of range [0, %d)", i, len(m.labels)))
	}
	px := m.pixels[i*m.size : (i+1)*m.size]
	dst = dst[:len(px)] // lets the compiler drop the bounds check in the loop
	for j, b := range px {
		dst[j] = byteToUnit[b]
	}
	return int(m.labels[i])
}
