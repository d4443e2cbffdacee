package clipping

import "testing"

// The Workspace's behaviour is tested from outside (package clipping_test, through
// clipping/clippingtest's suite); only what needs unexported identifiers stays here.

// TestEvenGroups: the partial-sum count is even (2 cores take equal shares), at most 16,
// at least 2, and never more than fit in the memory bound — worked by hand for wrn-16-4's
// 2,751,146 float32 parameters: 32 MiB holds ⌊33,554,432 / 11,004,584⌋ = 3 of them, so 2.
func TestEvenGroups(t *testing.T) {
	for _, tc := range []struct{ fit, want int }{
		{0, 2}, {1, 2}, {2, 2}, {3, 2}, {4, 4}, {7, 6}, {15, 14}, {16, 16}, {17, 16}, {1000, 16},
		{(32 << 20) / (2751146 * 4), 2},
	} {
		if got := evenGroups(tc.fit); got != tc.want {
			t.Errorf("evenGroups(%d) = %d, want %d", tc.fit, got, tc.want)
		}
	}
}
