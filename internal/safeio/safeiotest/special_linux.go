package safeiotest

import "syscall"

// mkzero makes a character device node with /dev/zero's numbers (1, 5 on Linux).
func mkzero(path string) error {
	const dev = 1<<8 | 5 // makedev(1, 5)
	return syscall.Mknod(path, syscall.S_IFCHR|0o600, dev)
}
