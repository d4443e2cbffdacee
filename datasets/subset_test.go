package datasets

import (
	"slices"
	"testing"
)

// plain hides the Labeler of a dataset, to test the fallbacks through Example.
type plain struct{ Dataset }

func tinyDataset(t *testing.T) *Images {
	t.Helper()
	// 6 one-pixel examples; pixel value 10·i so that an example identifies itself
	m, err := NewImages([]int{1}, 3, []byte{0, 10, 20, 30, 40, 50}, []byte{0, 1, 2, 0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSubset(t *testing.T) {
	base := tinyDataset(t)
	for _, ds := range []Dataset{base, plain{base}} {
		idx := []int{5, 0, 0, 3}
		s, err := Subset(ds, idx)
		if err != nil {
			t.Fatal(err)
		}
		idx[0] = 1 // Subset copied the indices
		if s.Len() != 4 || s.NumClasses() != 3 || !slices.Equal(s.Shape(), []int{1}) {
			t.Fatalf("Len %d NumClasses %d Shape %v", s.Len(), s.NumClasses(), s.Shape())
		}
		dst := make([]float32, 1)
		for k, want := range []struct {
			pixel float32
			label int
		}{{50, 2}, {0, 0}, {0, 0}, {30, 0}} {
			if l := s.Example(k, dst); l != want.label || dst[0] != want.pixel/255 {
				t.Errorf("subset example %d = (%v, %d), want (%v, %d)", k, dst[0]*255, l, want.pixel, want.label)
			}
		}
		if got := Labels(s); !slices.Equal(got, []int{2, 0, 0, 0}) {
			t.Errorf("Labels(subset) = %v", got)
		}
	}
	for _, bad := range [][]int{{6}, {-1}, {0, 7}} {
		if _, err := Subset(base, bad); err == nil {
			t.Errorf("Subset(%v): no error", bad)
		}
	}
}

func TestLabelsFallback(t *testing.T) {
	base := tinyDataset(t)
	want := []int{0, 1, 2, 0, 1, 2}
	if got := Labels(plain{base}); !slices.Equal(got, want) {
		t.Errorf("Labels via Example = %v, want %v", got, want)
	}
	if got := Labels(base); !slices.Equal(got, want) {
		t.Errorf("Labels via Label = %v, want %v", got, want)
	}
}

func TestStratifiedSubset(t *testing.T) {
	base := tinyDataset(t)
	s, err := StratifiedSubset(base, 3)
	if err != nil {
		t.Fatal(err)
	}
	// two examples per class, one pick each: the second of each class (k=1), i.e.
	// indices 3, 4, 5
	dst := make([]float32, 1)
	for k, want := range []float32{30, 40, 50} {
		s.Example(k, dst)
		if dst[0] != want/255 {
			t.Errorf("stratified subset example %d has pixel %v, want %v", k, dst[0]*255, want)
		}
	}
	if _, err := StratifiedSubset(base, 7); err == nil {
		t.Error("StratifiedSubset of more than Len: no error")
	}
}
