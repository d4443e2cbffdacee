package mnist_test

import (
	"fmt"
	"log"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
)

func ExampleEmbedded() {
	train, test, err := mnist.Embedded()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(train.Len(), test.Len(), train.Shape(), train.NumClasses())

	// A small, reproducible training set with every digit in proportion.
	small, err := datasets.StratifiedSubset(train, 100)
	if err != nil {
		log.Fatal(err)
	}
	x := make([]float32, datasets.Size(small))
	label := small.Example(0, x)
	fmt.Println(small.Len(), label >= 0 && label < 10)
	// Output:
	// 8000 2000 [1 28 28] 10
	// 100 true
}
