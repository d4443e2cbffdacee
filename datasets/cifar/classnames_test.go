package cifar

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/datasets"
)

// The loaders name their classes; the lists are those of the archives' label-name files,
// which list CIFAR-100's fine and coarse classes in alphabetical order.
func TestClassNames(t *testing.T) {
	for _, l := range [][]string{Classes100[:], CoarseClasses100[:]} {
		if !slices.IsSorted(l) || len(slices.Compact(slices.Clone(l))) != len(l) {
			t.Errorf("%q: not sorted or not distinct", l)
		}
	}
	if Classes10[3] != "cat" || Classes100[0] != "apple" || Classes100[99] != "worm" || CoarseClasses100[19] != "vehicles_2" {
		t.Error("a class name is not the archive's")
	}
	root := t.TempDir()
	writeDir(t, filepath.Join(root, cifar10.dir), cifar10Files())
	train, test, err := Load10(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range []datasets.Dataset{train, test} {
		if got := datasets.ClassNames(ds); !slices.Equal(got, Classes10[:]) {
			t.Errorf("CIFAR-10 names %q", got)
		}
	}
	writeDir(t, filepath.Join(root, cifar100.dir), map[string][]byte{"train.bin": batch100(0, 250), "test.bin": batch100(5000, 7)})
	for _, tc := range []struct {
		opts []Option
		want []string
	}{{nil, Classes100[:]}, {[]Option{CoarseLabels()}, CoarseClasses100[:]}, {[]Option{TrainOnly()}, Classes100[:]}} {
		train, test, err := Load100(filepath.Join(root, cifar100.dir), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		sets := []datasets.Dataset{train}
		if test != nil {
			sets = append(sets, test)
		}
		for _, ds := range sets {
			if got := datasets.ClassNames(ds); !slices.Equal(got, tc.want) {
				t.Errorf("CIFAR-100 names %q, want %q", got, tc.want)
			}
		}
	}
}
