package data

import "errors"

// ErrFormat is wrapped by every error that reports malformed input: a
// LIBSVM or CSV line that does not parse, a non-finite value, a header that
// contradicts the body. The message names the line.
var ErrFormat = errors.New("malformed input")

// ErrInvalid is wrapped by errors about a Dataset that is inconsistent:
// mismatched lengths, NaN entries, rows that break the declared norm bounds,
// labels that cannot be made binary.
var ErrInvalid = errors.New("invalid data set")
