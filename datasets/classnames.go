package datasets

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// ClassNamer is implemented by datasets that know what their classes are called: the
// digits of MNIST, the garments of Fashion-MNIST, the folder names of an image folder,
// the label values of a CSV file. ClassName(c) names class c in [0, NumClasses), or
// returns "" when the class has no name; it is not called with another c.
//
// Subset, StratifiedSubset and HoldOut pass the names of their dataset on, so the
// training part of a held-out split names its classes as the whole data set does.
type ClassNamer interface {
	ClassName(c int) string
}

// ClassNames returns the names of ds's classes, class 0 first, or nil when ds does not
// name them all (not a ClassNamer, or a class without a name). The names are what
// CheckClassNames accepts; a dataset whose names it refuses has none either.
func ClassNames(ds Dataset) []string {
	cn, ok := ds.(ClassNamer)
	if !ok || ds.NumClasses() < 1 {
		return nil
	}
	names := make([]string, ds.NumClasses())
	for c := range names {
		if names[c] = cn.ClassName(c); names[c] == "" {
			return nil
		}
	}
	if CheckClassNames(names) != nil {
		return nil
	}
	return names
}

// MaxClassNameLen bounds the length of a class name in bytes. Names come from folder
// names and CSV cells, and are printed in every report and prediction: a name longer
// than this is a mistake (a feature chosen as the label), not a class.
const MaxClassNameLen = 256

// CheckClassNames checks names of classes as they are stored and printed: each is
// non-empty valid UTF-8 of at most MaxClassNameLen bytes without control characters
// (a name goes to terminals and CSV files: no line breaks, no escape sequences). Names
// need not be distinct (a checkpoint only records them).
func CheckClassNames(names []string) error {
	for c, s := range names {
		switch {
		case s == "":
			return fmt.Errorf("datasets: class %d has an empty name", c)
		case len(s) > MaxClassNameLen:
			return fmt.Errorf("datasets: class %d: name of %d bytes; at most %d", c, len(s), MaxClassNameLen)
		case !utf8.ValidString(s):
			return fmt.Errorf("datasets: class %d: name %q is not valid UTF-8", c, s)
		}
		for _, r := range s {
			if unicode.IsControl(r) {
				return fmt.Errorf("datasets: class %d: name %q holds a control character", c, s)
			}
		}
	}
	return nil
}

// WithClassNames returns the dataset of m's examples with its classes named:
// names[c] names class c. The pixels and labels are shared, not copied (an Images is
// immutable). There must be one name per class, each as CheckClassNames accepts.
func (m *Images) WithClassNames(names []string) (*Images, error) {
	if len(names) != m.numClasses {
		return nil, fmt.Errorf("datasets: %d class names for %d classes", len(names), m.numClasses)
	}
	if err := CheckClassNames(names); err != nil {
		return nil, err
	}
	named := *m
	named.classNames = append([]string(nil), names...)
	return &named, nil
}

// ClassName returns the name of class c ("" when m has no names); see ClassNamer.
func (m *Images) ClassName(c int) string {
	if c < 0 || c >= len(m.classNames) {
		return ""
	}
	return m.classNames[c]
}

// ClassName returns the label value of class c as written in the file; see ClassNamer.
func (t *Table) ClassName(c int) string {
	if c < 0 || c >= len(t.ClassNames) {
		return ""
	}
	return t.ClassNames[c]
}

// ClassName returns the folder name of class c; see ClassNamer.
func (f *ImageFolder) ClassName(c int) string {
	if c < 0 || c >= len(f.ClassNames) {
		return ""
	}
	return f.ClassNames[c]
}

func (s *subset) ClassName(c int) string {
	if cn, ok := s.base.(ClassNamer); ok {
		return cn.ClassName(c)
	}
	return ""
}

var (
	_ ClassNamer = (*Images)(nil)
	_ ClassNamer = (*Table)(nil)
	_ ClassNamer = (*ImageFolder)(nil)
	_ ClassNamer = (*subset)(nil)
)
