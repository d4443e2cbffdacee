package mnist

import (
	"math"
	"os"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/datasets"
)

func fashionOrSkip(tb testing.TB) {
	if _, err := os.Stat(DebianFashionDir); err != nil {
		tb.Skipf("no Fashion-MNIST in %s: install Debian package dataset-fashion-mnist", DebianFashionDir)
	}
}

// TestDebianFashionMNIST reads the full Fashion-MNIST as Debian installs it.
func TestDebianFashionMNIST(t *testing.T) {
	fashionOrSkip(t)
	train, test, err := LoadFashion(DebianFashionDir)
	if err != nil {
		t.Fatal(err)
	}
	// Sizes and class balance as published with the data set (Xiao, Rasul, Vollgraf
	// 2017: 60,000 training and 10,000 test images, 10 balanced classes).
	for _, c := range []struct {
		ds       *datasets.Images
		n, class int
	}{{train, 60000, 6000}, {test, 10000, 1000}} {
		if c.ds.Len() != c.n || !slices.Equal(c.ds.Shape(), []int{1, 28, 28}) {
			t.Fatalf("%d examples of %v, want %d of [1 28 28]", c.ds.Len(), c.ds.Shape(), c.n)
		}
		hist := make([]int, 10)
		for _, l := range datasets.Labels(c.ds) {
			hist[l]++
		}
		for d, h := range hist {
			if h != c.class {
				t.Errorf("class %d (%s): %d examples, want %d", d, FashionClasses[d], h, c.class)
			}
		}
	}
	// Pixel mean 0.2860 and standard deviation 0.3530 over the training set, the
	// normalisation constants commonly used for Fashion-MNIST.
	var sum, sumSq float64
	x := make([]float32, 784)
	for i := range train.Len() {
		train.Example(i, x)
		for _, v := range x {
			sum += float64(v)
			sumSq += float64(v) * float64(v)
		}
	}
	n := float64(train.Len() * 784)
	mean := sum / n
	std := math.Sqrt(sumSq/n - mean*mean)
	t.Logf("pixel mean %.4f, std %.4f", mean, std)
	if math.Abs(mean-0.2860) > 0.0005 || math.Abs(std-0.3530) > 0.0005 {
		t.Errorf("pixel mean %.4f, std %.4f; want 0.2860, 0.3530", mean, std)
	}
}

// BenchmarkLoadFashionTrain reads and decodes the gzipped 60,000-image training pair.
func BenchmarkLoadFashionTrain(b *testing.B) {
	fashionOrSkip(b)
	images, _ := openIDX(os.DirFS(DebianFashionDir), TrainImages+".gz", DebianFashionDir+"/"+TrainImages+".gz")
	labels, _ := openIDX(os.DirFS(DebianFashionDir), TrainLabels+".gz", DebianFashionDir+"/"+TrainLabels+".gz")
	for b.Loop() {
		if _, err := decodePair(images, labels); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadFashion reads both splits, as LoadFashion does.
func BenchmarkLoadFashion(b *testing.B) {
	fashionOrSkip(b)
	for b.Loop() {
		if _, _, err := LoadFashion(DebianFashionDir); err != nil {
			b.Fatal(err)
		}
	}
}

// Fashion-MNIST's datasets name their classes (the garments of the data set's README).
func TestFashionClassNames(t *testing.T) {
	fashionOrSkip(t)
	train, err := LoadFashionTrain(DebianFashionDir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}
	if got := datasets.ClassNames(train); !slices.Equal(got, want) {
		t.Errorf("ClassNames = %q, want %q", got, want)
	}
}
