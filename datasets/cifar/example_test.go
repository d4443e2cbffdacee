package cifar_test

import (
	"fmt"
	"log"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/cifar"
)

func ExampleLoad10() {
	// The archive as downloaded, or the directory it unpacks to.
	train, test, err := cifar.Load10("data/cifar-10-binary.tar.gz")
	if err != nil {
		log.Fatal(err)
	}
	x := make([]float32, datasets.Size(train)) // 3×32×32: red plane, green, blue
	label := train.Example(0, x)
	fmt.Println(train.Len(), test.Len(), cifar.Classes10[label])
}
