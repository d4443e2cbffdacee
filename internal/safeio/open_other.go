//go:build !unix

package safeio

import "os"

// Without O_NOFOLLOW, OpenFile relies on the type check of what was opened.
const oNoFollow = 0

func setBlocking(*os.File) error { return nil }
