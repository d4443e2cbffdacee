package datasets

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// distinctImages returns n distinct 1×2×3 images (the example number's bytes spread over
// the pixels, so no two are equal) with labels drawn from classes classes.
func distinctImages(t *testing.T, n, classes int, seed uint64) *Images {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	pix := make([]byte, 0, 6*n)
	labels := make([]byte, n)
	for i := range n {
		pix = append(pix, byte(i), byte(i>>8), byte(i>>16), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)))
		labels[i] = byte(rng.IntN(classes))
	}
	m, err := NewImages([]int{1, 2, 3}, classes, pix, labels)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// key is an example's identity for the tests: its values and label as bytes.
func key(ds Dataset, i int) string {
	x := make([]float32, Size(ds))
	l := ds.Example(i, x)
	var b bytes.Buffer
	for _, v := range x {
		binary.Write(&b, binary.BigEndian, v)
	}
	binary.Write(&b, binary.BigEndian, int32(l))
	return b.String()
}

func keys(ds Dataset, idx []int) map[string]bool {
	m := map[string]bool{}
	for _, i := range idx {
		m[key(ds, i)] = true
	}
	return m
}

// symDiff counts the keys in exactly one of a and b.
func symDiff(a, b map[string]bool) int {
	n := 0
	for k := range a {
		if !b[k] {
			n++
		}
	}
	for k := range b {
		if !a[k] {
			n++
		}
	}
	return n
}

// without returns ds without example skip (a neighbouring data set).
func without(t *testing.T, ds Dataset, skip int) Dataset {
	t.Helper()
	idx := make([]int, 0, ds.Len()-1)
	for i := range ds.Len() {
		if i != skip {
			idx = append(idx, i)
		}
	}
	s, err := Subset(ds, idx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Brute force over every neighbour of a small data set: removing any one example leaves
// every other example on its side, so both parts change by that example at most; and
// since adding x to D−x gives D back, this covers adding as well. The split of the
// whole set is checked for every fraction, domain and seed below.
func TestHashSplitNeighbours(t *testing.T) {
	ds := distinctImages(t, 60, 3, 1)
	for _, fraction := range []float64{0.1, 0.5, 0.9} {
		for _, domain := range []string{DomainTest, DomainValidation} {
			for seed := uint64(0); seed < 3; seed++ {
				rest, picked, err := HashSplit(ds, fraction, seed, domain)
				if err != nil {
					t.Fatal(err)
				}
				R, P := keys(ds, rest), keys(ds, picked)
				for skip := range ds.Len() {
					d := without(t, ds, skip)
					rest2, picked2, err := HashSplit(d, fraction, seed, domain)
					if err != nil {
						t.Fatal(err)
					}
					R2, P2 := keys(d, rest2), keys(d, picked2)
					gone := key(ds, skip)
					// The other examples keep their side: the parts differ by the removed
					// example only, on the side it was on.
					if dr, dp := symDiff(R, R2), symDiff(P, P2); dr+dp != 1 || (dr == 1) != R[gone] || (dp == 1) != P[gone] {
						t.Fatalf("fraction %v, %s, seed %d, without example %d: rest changes by %d, picked by %d; want the removed example's side by 1, the other by 0",
							fraction, domain, seed, skip, dr, dp)
					}
				}
			}
		}
	}
}

// The split does not depend on the order of the examples: a shuffled copy splits the
// same examples the same way.
func TestHashSplitOrder(t *testing.T) {
	ds := distinctImages(t, 300, 4, 2)
	perm := rand.New(rand.NewPCG(5, 6)).Perm(ds.Len())
	shuffled, err := Subset(ds, perm)
	if err != nil {
		t.Fatal(err)
	}
	_, picked, _ := HashSplit(ds, 0.3, 9, DomainValidation)
	_, picked2, _ := HashSplit(shuffled, 0.3, 9, DomainValidation)
	if d := symDiff(keys(ds, picked), keys(shuffled, picked2)); d != 0 {
		t.Errorf("a shuffled copy picks %d other examples", d)
	}
}

// The rule itself, computed here from its definition with other code (a bytes.Buffer
// and binary.Write instead of append), for every example of a small set.
func TestHashSplitRule(t *testing.T) {
	ds := distinctImages(t, 200, 5, 3)
	const seed, fraction = 0xdeadbeef12345678, 0.37
	rest, picked, err := HashSplit(ds, fraction, seed, DomainTest)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	x := make([]float32, Size(ds))
	for i := range ds.Len() {
		l := ds.Example(i, x)
		var b bytes.Buffer
		b.WriteString("privtrain/test-split v1\x00")
		binary.Write(&b, binary.LittleEndian, uint64(seed))
		binary.Write(&b, binary.LittleEndian, x)
		binary.Write(&b, binary.LittleEndian, uint32(l))
		sum := sha256.Sum256(b.Bytes())
		var u uint64
		for k := 7; k >= 0; k-- {
			u = u<<8 | uint64(sum[k])
		}
		if math.Ldexp(float64(u), -64) < fraction {
			want = append(want, i)
		}
	}
	if !slices.Equal(picked, want) {
		t.Errorf("picked %v\nwant   %v", picked, want)
	}
	if len(rest)+len(picked) != ds.Len() {
		t.Errorf("%d + %d examples, want %d", len(rest), len(picked), ds.Len())
	}
	for i := 1; i < len(rest); i++ {
		if rest[i] <= rest[i-1] {
			t.Fatalf("rest not increasing: %v", rest)
		}
	}
}

// The number held out is Bin(n, F) for distinct examples: with the seeds fixed, each
// count must lie within 5 standard deviations of n·F (a bound a correct split misses
// with probability below 10⁻⁶ per count), and each class's share likewise within 5 of
// its own. Different seeds and different domains give different, nearly independent
// splits: two splits of fraction F share about F²·n picks.
func TestHashSplitFraction(t *testing.T) {
	const n, classes = 5000, 10
	ds := distinctImages(t, n, classes, 4)
	labels := Labels(ds)
	classSize := countsOf(labels, seq(n), classes)
	within := func(got int, m int, f float64) bool {
		mean, sd := float64(m)*f, math.Sqrt(float64(m)*f*(1-f))
		return math.Abs(float64(got)-mean) <= 5*sd
	}
	for _, f := range []float64{0.01, 0.1, 0.2, 0.5, 0.9} {
		for seed := uint64(1); seed <= 3; seed++ {
			_, picked, err := HashSplit(ds, f, seed, DomainValidation)
			if err != nil {
				t.Fatal(err)
			}
			if !within(len(picked), n, f) {
				t.Errorf("fraction %v seed %d: %d of %d held out, want %v ± 5·%.1f", f, seed, len(picked), n, n*f, math.Sqrt(n*f*(1-f)))
			}
			for c, got := range countsOf(labels, picked, classes) {
				if !within(got, classSize[c], f) {
					t.Errorf("fraction %v seed %d: class %d gives %d of %d", f, seed, c, got, classSize[c])
				}
			}
		}
	}
	// Overlaps: seeds 1 and 2, and the two domains with one seed. Independent splits of
	// F = 0.2 share Bin(n, 0.04) picks: 200 ± 5·13.9; equal splits would share ~1000.
	_, a, _ := HashSplit(ds, 0.2, 1, DomainValidation)
	_, b, _ := HashSplit(ds, 0.2, 2, DomainValidation)
	_, c, _ := HashSplit(ds, 0.2, 1, DomainTest)
	for _, pair := range []struct {
		name string
		p, q []int
	}{{"seeds 1 and 2", a, b}, {"test and validation domains", a, c}} {
		shared := 0
		for _, i := range pair.p {
			if _, ok := slices.BinarySearch(pair.q, i); ok {
				shared++
			}
		}
		if !within(shared, n, 0.04) {
			t.Errorf("%s: %d shared picks, want about 200 (independent splits)", pair.name, shared)
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Identical examples go to the same side.
func TestHashSplitDuplicates(t *testing.T) {
	pix := bytes.Repeat([]byte{1, 2, 3, 4}, 50)
	m, err := NewImages([]int{1, 2, 2}, 2, pix, make([]byte, 50))
	if err != nil {
		t.Fatal(err)
	}
	rest, picked, _ := HashSplit(m, 0.5, 1, DomainTest)
	if len(rest) != 50 && len(picked) != 50 {
		t.Errorf("50 identical examples split %d/%d, want all on one side", len(rest), len(picked))
	}
}

func TestHashHoldOut(t *testing.T) {
	ds := distinctImages(t, 400, 3, 5)
	named, err := ds.WithClassNames([]string{"ant", "bee", "cat"})
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := HashHoldOut(named, 0.25, 11, DomainTest)
	if err != nil {
		t.Fatal(err)
	}
	rest, picked, _ := HashSplit(named, 0.25, 11, DomainTest)
	if train.Len() != len(rest) || test.Len() != len(picked) || key(test, 0) != key(named, picked[0]) || key(train, 0) != key(named, rest[0]) {
		t.Errorf("HashHoldOut gives %d/%d examples, HashSplit %d/%d", train.Len(), test.Len(), len(rest), len(picked))
	}
	if got := ClassNames(test); !slices.Equal(got, []string{"ant", "bee", "cat"}) {
		t.Errorf("test part's class names %v", got)
	}
	for _, f := range []float64{0, 1, -0.5, math.NaN(), math.Inf(1)} {
		if _, _, err := HashHoldOut(ds, f, 1, DomainTest); err == nil {
			t.Errorf("fraction %v accepted", f)
		}
	}
	// One example: one side is always empty.
	one := distinctImages(t, 1, 2, 6)
	if _, _, err := HashHoldOut(one, 0.5, 1, DomainTest); err == nil {
		t.Error("a split of one example accepted")
	}
}
