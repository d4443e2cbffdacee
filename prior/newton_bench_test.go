package prior

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkWhiteningMap compares the two ways to the map of one covariance (benchstat the
// newton and eigen lines as a ratio; the d³ terms dominate from d ≈ 500 on).
func BenchmarkWhiteningMap(b *testing.B) {
	for _, dim := range []int{200, 600} {
		cov, mu, msq := testCovariance(dim, dim+100, 0, 9)
		nop := func(string, int, int) {}
		for _, m := range []struct {
			name string
			f    func(context.Context, int, []float64, []float64, float64, float64, Progress) ([]float32, error)
		}{{"newton", newtonMap}, {"eigen", eigenMap}} {
			b.Run(fmt.Sprintf("%s/d=%d", m.name, dim), func(b *testing.B) {
				for b.Loop() {
					if _, err := m.f(context.Background(), dim, cov, mu, msq, 1e-3, nop); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
