package checkpoint

import "github.com/privtrain/privtrain/nn/tensorfile"

// The container's errors that Save, Load, SaveWithKey, LoadWithKey, LoadUnverified and
// DecodeTraining pass on, the very values of package tensorfile (errors.Is matches either
// name), so that a caller of this package's functions tests them without importing the
// container. ErrInvalid (training.go) is this package's own.
var (
	ErrNotCheckpoint      = tensorfile.ErrNotCheckpoint
	ErrUnsupportedVersion = tensorfile.ErrUnsupportedVersion
	ErrCorrupt            = tensorfile.ErrCorrupt
	ErrTruncated          = tensorfile.ErrTruncated
	ErrChecksum           = tensorfile.ErrChecksum
	ErrTooLarge           = tensorfile.ErrTooLarge
	ErrNotRegular         = tensorfile.ErrNotRegular
	ErrAuthentication     = tensorfile.ErrAuthentication
	ErrNoMAC              = tensorfile.ErrNoMAC
)

// MinKeyLen is the shortest key SaveWithKey and LoadWithKey accept (tensorfile.MinKeyLen).
const MinKeyLen = tensorfile.MinKeyLen
