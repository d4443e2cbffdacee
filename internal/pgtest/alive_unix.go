//go:build unix

package pgtest

import "syscall"

// processAlive reports whether process pid exists (signal 0: no signal is sent).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
