package datasets

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// img3 is one 3×3 channel with values 1…9 row by row, and a second channel 11…19.
var img3 = []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19}

func TestAugmentApplyByHand(t *testing.T) {
	shape := []int{2, 3, 3}
	mirror := Augment{Crop: true, Pad: 1}
	zero := Augment{Crop: true, Pad: 1, ZeroPad: true}
	flip := Augment{Crop: true, Pad: 1, Flip: true}
	for _, tc := range []struct {
		name string
		a    Augment
		d    Draw
		want []float32 // first channel; the second is the first + 10 (0 stays 0)
	}{
		// Padded (mirror) rows: 1 1 2 3 3 / 1 1 2 3 3 / 4 4 5 6 6 / 7 7 8 9 9 / 7 7 8 9 9.
		{"mirror top-left", mirror, Draw{0, 0, false}, []float32{1, 1, 2, 1, 1, 2, 4, 4, 5}},
		{"mirror bottom-right", mirror, Draw{2, 2, false}, []float32{5, 6, 6, 8, 9, 9, 8, 9, 9}},
		{"mirror centre", mirror, Draw{1, 1, false}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"mirror top-right", mirror, Draw{0, 2, false}, []float32{2, 3, 3, 2, 3, 3, 5, 6, 6}},
		{"zero top-left", zero, Draw{0, 0, false}, []float32{0, 0, 0, 0, 1, 2, 0, 4, 5}},
		{"zero bottom-right", zero, Draw{2, 2, false}, []float32{5, 6, 0, 8, 9, 0, 0, 0, 0}},
		{"flip centre", flip, Draw{1, 1, true}, []float32{3, 2, 1, 6, 5, 4, 9, 8, 7}},
		// Crop at column offset 0 (columns −1, 0, 1 = 1 1 2), then flipped: 2 1 1.
		{"flip left crop", flip, Draw{1, 0, true}, []float32{2, 1, 1, 5, 4, 4, 8, 7, 7}},
		{"flip only", Augment{Flip: true}, Draw{0, 0, true}, []float32{3, 2, 1, 6, 5, 4, 9, 8, 7}},
	} {
		dst := make([]float32, len(img3))
		tc.a.Apply(dst, img3, shape, tc.d)
		want := slices.Clone(tc.want)
		for _, v := range tc.want {
			if v == 0 {
				want = append(want, 0)
			} else {
				want = append(want, v+10)
			}
		}
		if !slices.Equal(dst, want) {
			t.Errorf("%s: got %v, want %v", tc.name, dst, want)
		}
	}
}

func TestAugmentDraws(t *testing.T) {
	a := Augment{Crop: true, Pad: 4, Flip: true}
	const key = 12345
	// Reproducible: the same (key, step, example, view) gives the same draw.
	if a.Draw(key, 3, 17, 2) != a.Draw(key, 3, 17, 2) {
		t.Fatal("Draw is not deterministic")
	}
	// Each input changes the draws: over 200 examples, views of one example, the same
	// view at the next step, another key, almost never coincide (a coincidence has
	// probability 1/(9·9·2) per pair).
	same := [4]int{}
	for i := range 200 {
		d := a.Draw(key, 3, i, 0)
		for j, other := range []Draw{a.Draw(key, 3, i, 1), a.Draw(key, 4, i, 0), a.Draw(key+1, 3, i, 0), a.Draw(key, 3, i+1000, 0)} {
			if other == d {
				same[j]++
			}
		}
	}
	for j, n := range same {
		if n > 10 { // expected 200/162 ≈ 1.2
			t.Errorf("input %d: %d of 200 draws coincide", j, n)
		}
	}
	// Uniform offsets in [0, 8] and fair flips: chi-square of 20,000 draws (9 cells, the
	// 0.9999 quantile of χ²₈ is 31.8) and the flips within 5 standard deviations of half.
	const n = 20000
	var dy, dx [9]int
	flips := 0
	for i := range n {
		d := a.Draw(key, i/100, i%100, i%7)
		if d.DY < 0 || d.DY > 8 || d.DX < 0 || d.DX > 8 {
			t.Fatalf("offsets %d, %d outside [0, 8]", d.DY, d.DX)
		}
		dy[d.DY]++
		dx[d.DX]++
		if d.Flip {
			flips++
		}
	}
	for _, counts := range [][9]int{dy, dx} {
		var chi2 float64
		for _, c := range counts {
			e := float64(n) / 9
			chi2 += (float64(c) - e) * (float64(c) - e) / e
		}
		if chi2 > 31.8 {
			t.Errorf("offsets %v: χ² = %.1f", counts, chi2)
		}
	}
	if math.Abs(float64(flips)-n/2) > 5*math.Sqrt(n/4) {
		t.Errorf("%d flips of %d", flips, n)
	}
	// No crop, no flip: the identity draw.
	if d := (Augment{}).Draw(key, 1, 2, 3); d != (Draw{}) {
		t.Errorf("empty augmentation drew %+v", d)
	}
}

type constDataset struct{ img []float32 }

func (c constDataset) Len() int                         { return 1 }
func (c constDataset) Shape() []int                     { return []int{2, 3, 3} }
func (c constDataset) NumClasses() int                  { return 3 }
func (c constDataset) Example(_ int, dst []float32) int { copy(dst, c.img); return 2 }

func TestAugmentView(t *testing.T) {
	a := Augment{Crop: true, Pad: 1, Flip: true}
	ds := constDataset{img3}
	scratch, dst, want := make([]float32, 18), make([]float32, 18), make([]float32, 18)
	views := map[string]bool{}
	for v := range 8 {
		if label := a.View(ds, 0, 5, v, 99, dst, scratch, ds.Shape()); label != 2 {
			t.Fatalf("label %d", label)
		}
		a.Apply(want, img3, ds.Shape(), a.Draw(99, 5, 0, v))
		if !slices.Equal(dst, want) {
			t.Fatalf("view %d is not Apply of its Draw", v)
		}
		views[string(float32Bytes(dst))] = true
	}
	if len(views) < 3 {
		t.Errorf("8 views of one example gave %d distinct images", len(views))
	}
}

func float32Bytes(x []float32) []byte {
	b := make([]byte, 0, len(x))
	for _, v := range x {
		b = append(b, byte(v))
	}
	return b
}

func TestParseAugment(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Augment
	}{
		{"none", Augment{}},
		{"crop", Augment{Crop: true, Pad: DefaultPad}},
		{"flip", Augment{Flip: true}},
		{"crop,flip", Augment{Crop: true, Pad: DefaultPad, Flip: true}},
		{"flip, crop", Augment{Crop: true, Pad: DefaultPad, Flip: true}},
		{"crop:2", Augment{Crop: true, Pad: 2}},
		{"flip,crop:1", Augment{Crop: true, Pad: 1, Flip: true}},
		{" crop:64 ", Augment{Crop: true, Pad: MaxPad}},
	} {
		got, err := ParseAugment(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseAugment(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "rotate", "crop,crop", "flip,flip", "crop,", "none,crop",
		"crop:0", "crop:-1", "crop:x", "crop:", "crop:65", "crop:2,crop", "crop:1,crop:2", "flip:2", "none:1", "crop:2.5"} {
		if _, err := ParseAugment(bad); !errors.Is(err, ErrAugment) {
			t.Errorf("ParseAugment(%q): %v, want ErrAugment", bad, err)
		}
	}
	if s := (Augment{Crop: true, Pad: 4, Flip: true}).String(); s != "crop(pad=4,mirror),flip" {
		t.Errorf("String = %q", s)
	}
	if d := DefaultAugment("cifar10"); !d.Flip || !d.Crop || d.Pad != 4 {
		t.Errorf("cifar10 default %+v", d)
	}
	for _, name := range []string{"mnist", "fashion-mnist", "mnist-embedded"} {
		if d := DefaultAugment(name); d.Flip || !d.Crop {
			t.Errorf("%s default %+v", name, d)
		}
	}
}

func TestAugmentCheck(t *testing.T) {
	crop := Augment{Crop: true, Pad: 4}
	if err := crop.Check([]int{1, 28, 28}); err != nil {
		t.Error(err)
	}
	if err := (Augment{}).Check([]int{81, 7, 7, 2}); err != nil {
		t.Errorf("no augmentation must fit any shape: %v", err)
	}
	for _, tc := range []struct {
		a     Augment
		shape []int
	}{
		{crop, []int{784}},
		{Augment{Flip: true}, []int{3, 32}},
		{Augment{Crop: true, Pad: -1}, []int{1, 8, 8}},
		{Augment{Crop: true, Pad: 5}, []int{1, 4, 8}},
	} {
		if err := tc.a.Check(tc.shape); !errors.Is(err, ErrAugment) {
			t.Errorf("%+v on %v: %v, want ErrAugment", tc.a, tc.shape, err)
		}
	}
	if err := (Augment{Crop: true, Pad: 5, ZeroPad: true}).Check([]int{1, 4, 8}); err != nil {
		t.Errorf("zero padding wider than the image is fine: %v", err)
	}
}

func TestAugmentKey(t *testing.T) {
	if AugmentKey(1) != AugmentKey(1) || AugmentKey(1) == AugmentKey(2) {
		t.Fatal("AugmentKey must be a deterministic function of the seed")
	}
	a, err := NewAugmentKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewAugmentKey()
	if a == b {
		t.Fatal("two crypto/rand keys coincide")
	}
}

// FuzzParseAugment: no input panics, an error is ErrAugment, and what parses is a valid
// augmentation: a crop's padding within 1…MaxPad, no padding without a crop, and its
// String form names the same padding.
func FuzzParseAugment(f *testing.F) {
	for _, s := range []string{"none", "crop", "flip", "crop,flip", "crop:2", "flip,crop:1", "crop:0", "crop:99999999999999999999", "crop:+3", "crop: 2", ",", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAugment(s)
		if err != nil {
			if !errors.Is(err, ErrAugment) {
				t.Fatalf("ParseAugment(%q): %v, not ErrAugment", s, err)
			}
			return
		}
		if a.Crop != (a.Pad > 0) || a.Pad > MaxPad || a.ZeroPad {
			t.Fatalf("ParseAugment(%q) = %+v", s, a)
		}
		if a.Crop && !strings.Contains(a.String(), fmt.Sprintf("crop(pad=%d,", a.Pad)) {
			t.Fatalf("ParseAugment(%q).String() = %q", s, a.String())
		}
	})
}
