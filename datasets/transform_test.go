package datasets

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestTransform checks every example against f applied by hand, chunk boundaries (1,100
// examples: chunks of 512, 512 and 76) and the errors.
func TestTransform(t *testing.T) {
	const n = 1100
	pixels := make([]byte, n*2)
	labels := make([]byte, n)
	for i := range n {
		pixels[2*i], pixels[2*i+1], labels[i] = byte(i%251), byte(i%13), byte(i%3)
	}
	ds, err := NewImages([]int{2}, 3, pixels, labels)
	if err != nil {
		t.Fatal(err)
	}
	// f maps example (a, b) to (a+b, a−b, 2a): three values per example.
	f := func(x []float32) ([]float32, error) {
		out := make([]float32, 0, len(x)/2*3)
		for i := 0; i < len(x); i += 2 {
			out = append(out, x[i]+x[i+1], x[i]-x[i+1], 2*x[i])
		}
		return out, nil
	}
	fs, err := Transform(context.Background(), ds, []int{3}, f)
	if err != nil {
		t.Fatal(err)
	}
	if fs.Len() != n || fs.NumClasses() != 3 || len(fs.Shape()) != 1 || fs.Shape()[0] != 3 {
		t.Fatalf("Len %d, NumClasses %d, Shape %v", fs.Len(), fs.NumClasses(), fs.Shape())
	}
	raw, got := make([]float32, 2), make([]float32, 3)
	for i := range n {
		l := ds.Example(i, raw)
		if fl := fs.Example(i, got); fl != l || fs.Label(i) != l {
			t.Fatalf("example %d: label %d/%d, want %d", i, fl, fs.Label(i), l)
		}
		want := []float32{raw[0] + raw[1], raw[0] - raw[1], 2 * raw[0]}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("example %d value %d: %g, want %g", i, k, got[k], want[k])
			}
		}
	}

	if _, err := Transform(context.Background(), ds, []int{0}, f); err == nil {
		t.Error("shape [0] accepted")
	}
	short := func(x []float32) ([]float32, error) { return x[:1], nil }
	if _, err := Transform(context.Background(), ds, []int{3}, short); err == nil || !strings.Contains(err.Error(), "want 512×3") {
		t.Errorf("short transform: %v", err)
	}
	boom := errors.New("boom")
	calls := 0
	failing := func(x []float32) ([]float32, error) {
		if calls++; calls == 2 {
			return nil, boom
		}
		return f(x)
	}
	if _, err := Transform(context.Background(), ds, []int{3}, failing); !errors.Is(err, boom) || !strings.Contains(err.Error(), "examples 512…1023") {
		t.Errorf("failing chunk: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Transform(ctx, ds, []int{3}, f); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestTransformProgress: WithProgress is told after each chunk how many examples are done,
// rising to the total.
func TestTransformProgress(t *testing.T) {
	n := 2*transformChunk + 3
	ds, err := NewImages([]int{4}, 2, make([]byte, 4*n), make([]byte, n))
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	ctx := WithProgress(context.Background(), func(done, total int) {
		if total != n {
			t.Errorf("total %d, want %d", total, n)
		}
		seen = append(seen, done)
	})
	if _, err = Transform(ctx, ds, []int{1}, func(x []float32) ([]float32, error) { return x[:len(x)/4], nil }); err != nil {
		t.Fatal(err)
	}
	if want := []int{transformChunk, 2 * transformChunk, n}; !slices.Equal(seen, want) {
		t.Errorf("progress %v, want %v", seen, want)
	}
}
