//go:build !unix

package atomicfile

// processGone cannot tell without signals: only StaleAge removes other processes' files.
func processGone(int) bool { return false }
