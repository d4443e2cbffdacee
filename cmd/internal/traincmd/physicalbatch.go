package traincmd

import (
	"fmt"
	"io"

	"github.com/privtrain/privtrain/internal/privrand"
)

// stepRowsTail is the probability, per step, that a Poisson batch holds more examples
// than the clamped physical batch has room for: that step then runs in two model calls
// instead of one, with the same result up to the grouping of its sums.
const stepRowsTail = 1e-6

// stepRows is the most rows one training step can fill: the largest logical batch times
// the augmentation multiplicity. Shuffled batches hold at most -batch examples; a Poisson
// batch of expected size b = qn exceeds the returned size with probability at most
// stepRowsTail (about b + 5√b: 339 at b = 256, n = 8,000), and never holds more than n.
func stepRows(o *options, n int) int {
	k := max(1, o.aug.k)
	if o.sampling == "shuffle" {
		return o.batch * k
	}
	p, err := privrand.NewPoisson(n, float64(o.batch)/float64(n))
	if err != nil { // not reachable: the caller checked 1 ≤ -batch ≤ n
		return n * k
	}
	return min(n, p.BatchBound(stepRowsTail)) * k
}

// clampPhysicalBatch lowers a given -physical-batch to the rows a step can use, with a
// note: the model allocates its activations for every row up front (100,000 rows on 8,000
// examples took 647 MB, 2M rows asked for one 6.27 GB allocation), and rows beyond the
// largest batch are padding that is masked anyway. A clamp rather than a usage error: a
// generous value ("one call per step") is a reasonable request whose intent the clamp
// keeps, not a mistake.
func clampPhysicalBatch(o *options, n int, stderr io.Writer) {
	if o.physicalBatchDefaulted {
		return // at most -batch (times K) already
	}
	if most := stepRows(o, n); o.physicalBatch > most {
		fmt.Fprintf(stderr, "note: -physical-batch %d lowered to %d rows, the most one step can fill (%s batches of expected size %d from %d examples%s)\n",
			o.physicalBatch, most, o.sampling, o.batch, n, augNote(o))
		o.physicalBatch = most
	}
}

func augNote(o *options) string {
	if o.aug.k > 1 {
		return fmt.Sprintf(", × %d views", o.aug.k)
	}
	return ""
}
