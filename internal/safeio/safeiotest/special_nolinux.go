//go:build !linux

package safeiotest

import "errors"

// mkzero: device numbers differ between systems; the tests make device nodes on Linux only.
func mkzero(string) error { return errors.New("device nodes are made on Linux only") }
