package nn

import (
	"io"

	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Decode exposes the checkpoint reader to the external tests' fuzz targets, with a 1 MiB
// size limit so that mutated size fields cannot make each run allocate gigabytes.
func Decode(r io.Reader) (*Checkpoint, error) { return decode(r, checkpoint.WithMaxSize(1<<20)) }
