package datasets

import "fmt"

// Subset returns the dataset whose example k is example indices[k] of ds. Indices may
// repeat. The indices are copied; ds is shared, not copied.
func Subset(ds Dataset, indices []int) (Dataset, error) {
	n := ds.Len()
	for k, i := range indices {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("datasets: subset index %d (position %d) out of range [0, %d)", i, k, n)
		}
	}
	return &subset{base: ds, indices: append([]int(nil), indices...)}, nil
}

// StratifiedSubset returns n examples of ds chosen by StratifiedSplit: every class keeps
// its share of ds (to within one example) and the chosen examples are spread evenly over
// each class's occurrences in index order. The choice is deterministic, which makes it
// the subset for fast end-to-end tests.
func StratifiedSubset(ds Dataset, n int) (Dataset, error) {
	_, picked, err := StratifiedSplit(Labels(ds), n)
	if err != nil {
		return nil, err
	}
	return Subset(ds, picked)
}

type subset struct {
	base    Dataset
	indices []int
}

var (
	_ Dataset = (*subset)(nil)
	_ Labeler = (*subset)(nil)
)

func (s *subset) Len() int        { return len(s.indices) }
func (s *subset) Shape() []int    { return s.base.Shape() }
func (s *subset) NumClasses() int { return s.base.NumClasses() }

func (s *subset) Example(i int, dst []float32) int {
	return s.base.Example(s.indices[i], dst)
}

func (s *subset) Label(i int) int {
	if l, ok := s.base.(Labeler); ok {
		return l.Label(s.indices[i])
	}
	return s.base.Example(s.indices[i], make([]float32, Size(s.base)))
}
