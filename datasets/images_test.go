package datasets

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNewImagesErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shape   []int
		classes int
		pixels  int
		labels  []byte
		want    string
	}{
		{"empty shape", nil, 10, 0, nil, "empty"},
		{"zero dim", []int{1, 0, 2}, 10, 0, nil, "≤ 0"},
		{"no classes", []int{2}, 0, 2, []byte{0}, "classes"},
		{"too many classes", []int{2}, 257, 2, []byte{0}, "classes"},
		{"short pixels", []int{2, 2}, 10, 7, []byte{0, 1}, "pixel bytes"},
		{"long pixels", []int{2, 2}, 10, 9, []byte{0, 1}, "pixel bytes"},
		{"pixels without labels", []int{2}, 10, 2, nil, "pixel bytes"},
		{"label range", []int{2}, 3, 4, []byte{2, 3}, "label 3"},
	} {
		_, err := NewImages(tc.shape, tc.classes, make([]byte, tc.pixels), tc.labels)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func TestImagesExample(t *testing.T) {
	shape := []int{1, 2, 2}
	pixels := []byte{0, 255, 51, 128, 1, 2, 3, 254}
	m, err := NewImages(shape, 3, pixels, []byte{2, 0})
	if err != nil {
		t.Fatal(err)
	}
	if m.Len() != 2 || m.NumClasses() != 3 || !slices.Equal(m.Shape(), shape) || Size(m) != 4 {
		t.Fatalf("Len %d NumClasses %d Shape %v", m.Len(), m.NumClasses(), m.Shape())
	}
	m.Shape()[0] = 99 // a copy: must not change the dataset
	if m.Shape()[0] != 1 {
		t.Error("Shape returned the internal slice")
	}
	dst := make([]float32, 4)
	for i, wantLabel := range []int{2, 0} {
		if l := m.Example(i, dst); l != wantLabel || m.Label(i) != wantLabel {
			t.Errorf("example %d: label %d / %d, want %d", i, l, m.Label(i), wantLabel)
		}
		for j, v := range dst {
			want := float64(pixels[i*4+j]) / 255 // exact value; float32 is within half an ulp
			if math.Abs(float64(v)-want) > 0.5*math.Pow(2, -23) || v < 0 || v > 1 {
				t.Errorf("example %d value %d = %v, want %v", i, j, v, want)
			}
		}
	}
	m.Example(0, dst)
	if dst[0] != 0 || dst[1] != 1 {
		t.Errorf("0 and 255 map to %v and %v, want 0 and 1", dst[0], dst[1])
	}
}

func TestImagesExamplePanics(t *testing.T) {
	m, err := NewImages([]int{2}, 2, []byte{1, 2}, []byte{1})
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(){
		"short dst":      func() { m.Example(0, make([]float32, 1)) },
		"negative index": func() { m.Example(-1, make([]float32, 2)) },
		"index too big":  func() { m.Example(1, make([]float32, 2)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestImagesExampleDoesNotAllocate(t *testing.T) {
	m, err := NewImages([]int{1, 28, 28}, 10, make([]byte, 784*3), []byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 784)
	if a := testing.AllocsPerRun(100, func() { m.Example(1, dst) }); a != 0 {
		t.Errorf("Example allocates %v times per call", a)
	}
}

func BenchmarkImagesExample(b *testing.B) {
	m, err := NewImages([]int{1, 28, 28}, 10, make([]byte, 784*100), make([]byte, 100))
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float32, 784)
	b.SetBytes(784)
	for i := 0; b.Loop(); i++ {
		m.Example(i%100, dst)
	}
}
