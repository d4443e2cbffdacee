package mnist

import (
	"embed"
	"io/fs"
	"sync"

	"github.com/privtrain/privtrain/datasets"
)

//go:generate go run ./gen -out sample

//go:embed sample/*.gz
var sample embed.FS

// Embedded returns the MNIST sample built into the package: 8,000 training and 2,000
// test digits of shape [1 28 28], stratified by digit (see the package documentation for
// where they come from and how they were split). The data is decoded on the first call
// only; later calls return the same, immutable datasets.
func Embedded() (train, test *datasets.Images, err error) {
	e := embeddedOnce()
	return e.train, e.test, e.err
}

type embeddedSets struct {
	train, test *datasets.Images
	err         error
}

var embeddedOnce = sync.OnceValue(func() embeddedSets {
	var e embeddedSets
	e.train, e.test, e.err = decodeEmbedded()
	return e
})

func decodeEmbedded() (train, test *datasets.Images, err error) {
	dir, err := fs.Sub(sample, "sample")
	if err != nil {
		return nil, nil, err
	}
	return named(Classes[:])(loadFS(dir, "embedded sample", "the package was built without its sample; run go generate in datasets/mnist"))
}
