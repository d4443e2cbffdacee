//go:build !unix

package safeiotest

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
