package num

import "testing"

func TestSizeOf(t *testing.T) {
	if s := SizeOf[float32](); s != 4 {
		t.Errorf("SizeOf[float32] = %d, want 4", s)
	}
	if s := SizeOf[float64](); s != 8 {
		t.Errorf("SizeOf[float64] = %d, want 8", s)
	}
}

func TestProd(t *testing.T) {
	for _, c := range []struct {
		shape []int
		want  int
	}{{nil, 1}, {[]int{5}, 5}, {[]int{3, 28, 28}, 2352}, {[]int{2, 0, 4}, 0}} {
		if got := Prod(c.shape); got != c.want {
			t.Errorf("Prod(%v) = %d, want %d", c.shape, got, c.want)
		}
	}
}
