package cli

import (
	"strconv"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/cifar"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// ClassNames returns the names of the classes 0 to classes−1 of the model of c, for
// evaluate's and predict's output: the names the checkpoint records (the training
// data's, see datasets.ClassNames); for a checkpoint written before checkpoints recorded
// them, the names of the built-in data set it was trained on; else the class numbers
// ("0", "1", …). named says whether they are names rather than numbers.
func ClassNames(c *checkpoint.Training, classes int) (names []string, named bool) {
	if len(c.ClassNames) == classes && datasets.CheckClassNames(c.ClassNames) == nil {
		return c.ClassNames, true
	}
	if b := builtinClassNames[c.Dataset.Name]; len(b) == classes {
		return b, true
	}
	names = make([]string, classes)
	for k := range names {
		names[k] = strconv.Itoa(k)
	}
	return names, false
}

// builtinClassNames are the class names of the built-in data sets by the name cmd/train
// records for them (checkpoint.Fingerprint's Name).
var builtinClassNames = map[string][]string{
	"mnist":           mnist.Classes[:],
	"mnist-embedded":  mnist.Classes[:],
	"fashion-mnist":   mnist.FashionClasses[:],
	"cifar10":         cifar.Classes10[:],
	"cifar100":        cifar.Classes100[:],
	"cifar100-coarse": cifar.CoarseClasses100[:],
}
