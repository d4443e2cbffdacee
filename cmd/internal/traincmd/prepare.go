package traincmd

import (
	"context"
	"fmt"
	"io"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
)

// prepareOnly computes, for train -prepare-only, what -model needs that sees no data (a
// prior's whitening map, into the prior cache) and returns: no data is read and nothing is
// spent. The network is built for the example shape of a built-in -dataset (your own
// data's shape is not known without reading it: -model FILE.json with its input_shape
// works there).
func prepareOnly(ctx context.Context, o *options, stderr io.Writer) (int, error) {
	shape := builtinShape[o.dataset]
	if shape == nil {
		return 0, exit.Usagef("-prepare-only: the example shape of -dataset %s is known only from its data; prepare with a built-in -dataset of the same shape (mnist: 1×28×28, cifar10: 3×32×32)", o.dataset)
	}
	spec, err := modelSpec(o, shape, 10)
	if err != nil {
		return 0, err
	}
	if _, ok := cli.Prior(spec); !ok {
		fmt.Fprintf(stderr, "train: -prepare-only: -model %s sees no prior: nothing to prepare\n", o.model)
		return exit.OK, nil
	}
	if err := cli.PreparePriorsContext(ctx, spec, stderr); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "train: %s\n", exit.OneLine(err.Error()))
			return exit.Interrupted, nil
		}
		return 0, err
	}
	fmt.Fprintf(stderr, "train: -prepare-only: -model %s is ready; its runs start from the cached map\n", o.model)
	return exit.OK, nil
}
