package datasets

// Dataset is what the trainer consumes: a fixed, indexable collection of labelled
// examples of one shape.
//
// Contract for implementations:
//   - Len, Shape and NumClasses never change over the life of the value.
//   - Shape is the per-example shape, channels first: [1 28 28] for MNIST, [3 32 32] for
//     CIFAR (CHW). The caller may modify the returned slice; it must be a copy.
//   - Example(i, dst) writes example i, flattened row-major in Shape's order, into dst and
//     returns its label in [0, NumClasses). Values are in [0, 1]. len(dst) must equal the
//     product of Shape; Example panics when it does not or when i is outside [0, Len),
//     as an out-of-range slice index does: both are programming errors, not bad data.
//     Bad data is rejected when the dataset is built, never in Example.
//   - Example must not retain dst, and must be safe for concurrent use by several
//     goroutines with different dst buffers; the trainer calls it for every example of
//     every batch, so it should not allocate.
type Dataset interface {
	Len() int
	Shape() []int
	NumClasses() int
	Example(i int, dst []float32) int
}

// Labeler is implemented by datasets that can return a label without copying the
// example. Labels, StratifiedSubset and Subset use it when it is there and fall back to
// Example when it is not.
type Labeler interface {
	Label(i int) int
}

// Size returns the number of values in one example of ds: the product of its Shape.
func Size(ds Dataset) int {
	n := 1
	for _, d := range ds.Shape() {
		n *= d
	}
	return n
}

// Labels returns the labels of all examples of ds, in index order.
func Labels(ds Dataset) []int {
	labels := make([]int, ds.Len())
	if l, ok := ds.(Labeler); ok {
		for i := range labels {
			labels[i] = l.Label(i)
		}
		return labels
	}
	buf := make([]float32, Size(ds))
	for i := range labels {
		labels[i] = ds.Example(i, buf)
	}
	return labels
}
