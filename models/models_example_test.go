package models_test

import (
	"fmt"

	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

func Example() {
	for _, spec := range []nn.Spec{models.LogisticRegression(), models.MNISTCNN(models.Tanh), models.CIFAR10CNN(models.ReLU)} {
		m, err := nn.New(spec, 1)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-16s %v → %d classes, %9d parameters, layers %v\n", spec.Name, m.InputShape(), m.NumClasses(), m.NumParams(), m.ParamLayers())
	}
	// Output:
	// logreg           [1 28 28] → 10 classes,      7850 parameters, layers [dense1]
	// mnist-cnn-tanh   [1 28 28] → 10 classes,     26010 parameters, layers [conv1 conv2 dense1 dense2]
	// cifar10-cnn-relu [3 32 32] → 10 classes,   1068298 parameters, layers [conv1 conv2 dense1 dense2 dense3]
}
