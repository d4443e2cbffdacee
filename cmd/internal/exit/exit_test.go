package exit

import (
	"errors"
	"fmt"
	"testing"
)

// The statuses are the documented ones (README, each command's -help): 0, 1, 2, 130.
func TestStatus(t *testing.T) {
	wrapped := fmt.Errorf("loading: %w", Usagef("-data %s: no such file", "x"))
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{Usagef("-epochs %d: want ≥ 1", 0), 2},
		{wrapped, 2},
		{errors.New("disk full"), 1},
	} {
		if got := Status(tc.err); got != tc.want {
			t.Errorf("Status(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
	if Interrupted != 128+2 { // SIGINT is signal 2
		t.Errorf("Interrupted = %d, want 130", Interrupted)
	}
	if got := wrapped.Error(); got != "loading: -data x: no such file" {
		t.Errorf("message %q", got)
	}
	if got := OneLine("a\n  b\tc "); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}
