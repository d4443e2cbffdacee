//go:build unix

package safeiotest

import "syscall"

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
