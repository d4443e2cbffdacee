package checkpoint

import (
	"fmt"
	"slices"
)

// Fingerprint identifies a training set in a checkpoint, so that a run is not resumed on
// other data: a name chosen by the caller, the size, the example shape, the number of
// classes, the SHA-256 of the labels in index order, and the content fingerprint
// (datasets.ContentFingerprint: a SHA-256 over every example's values and label), which
// tells apart two data sets with the same labels and other examples.
//
// Content is empty in checkpoints written before it existed: such a fingerprint can
// only be compared on the rest (Equal then ignores Content, and Unchecked says so).
type Fingerprint struct {
	Name    string `json:"name"`
	Size    int    `json:"size"`
	Shape   []int  `json:"shape"`
	Classes int    `json:"classes"`
	Labels  string `json:"labels_sha256"`
	Content string `json:"content_sha256,omitempty"`
}

// Equal reports whether f and g describe the same data: every field equal, Content
// included when both have it. When either lacks Content (a checkpoint older than the
// field), the content cannot be compared and Equal compares the rest; ContentUnchecked
// reports that case.
func (f Fingerprint) Equal(g Fingerprint) bool {
	if f.Content != "" && g.Content != "" && f.Content != g.Content {
		return false
	}
	return f.Name == g.Name && f.Size == g.Size && slices.Equal(f.Shape, g.Shape) && f.Classes == g.Classes && f.Labels == g.Labels
}

// ContentUnchecked reports whether Equal could not compare the content of f and g,
// because one of them has no content fingerprint.
func (f Fingerprint) ContentUnchecked(g Fingerprint) bool {
	return f.Content == "" || g.Content == ""
}

// String describes the fingerprint in one line.
func (f Fingerprint) String() string {
	l := f.Labels
	if len(l) > 12 {
		l = l[:12]
	}
	s := fmt.Sprintf("%q: %d examples of shape %v, %d classes, labels sha256 %s…", f.Name, f.Size, f.Shape, f.Classes, l)
	if c := f.Content; c != "" {
		if len(c) > 12 {
			c = c[:12]
		}
		s += fmt.Sprintf(", content sha256 %s…", c)
	}
	return s
}
