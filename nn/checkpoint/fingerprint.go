package checkpoint

import (
	"fmt"
	"slices"
)

// Fingerprint identifies a training set in a checkpoint, so that a run is not resumed on
// other data: a name chosen by the caller, the size, the example shape, the number of
// classes and the SHA-256 of the labels in index order. It does not hash the pixels
// (cheap to compute for any size); the labels alone tell MNIST from Fashion-MNIST, a
// subset from the full set, and one subset from another.
type Fingerprint struct {
	Name    string `json:"name"`
	Size    int    `json:"size"`
	Shape   []int  `json:"shape"`
	Classes int    `json:"classes"`
	Labels  string `json:"labels_sha256"`
}

// Equal reports whether f and g describe the same data.
func (f Fingerprint) Equal(g Fingerprint) bool {
	return f.Name == g.Name && f.Size == g.Size && slices.Equal(f.Shape, g.Shape) && f.Classes == g.Classes && f.Labels == g.Labels
}

// String describes the fingerprint in one line.
func (f Fingerprint) String() string {
	l := f.Labels
	if len(l) > 12 {
		l = l[:12]
	}
	return fmt.Sprintf("%q: %d examples of shape %v, %d classes, labels sha256 %s…", f.Name, f.Size, f.Shape, f.Classes, l)
}
