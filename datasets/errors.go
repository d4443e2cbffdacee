package datasets

import "errors"

// Errors that the format readers (datasets/mnist, datasets/cifar) share. They come
// wrapped with the file's path and the details of the fault; test for them with
// errors.Is. The readers export them under their own names too (mnist.ErrTruncated is
// ErrTruncated).
var (
	// ErrTruncated: a file or stream ends before the data it announces.
	ErrTruncated = errors.New("file ends early")
	// ErrLabelRange: a label is outside 0 to classes−1.
	ErrLabelRange = errors.New("label out of range")
)
