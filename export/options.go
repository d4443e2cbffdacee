package export

import (
	"fmt"
	"strconv"

	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/nn"
)

// Option configures an export.
type Option func(*exportOptions)

type exportOptions struct {
	classes []string             // nil: the class numbers
	table   []datasets.CSVColumn // nil: no CSV encoding
}

// WithTable gives the CSV layout the model's features were read with (a run on
// -dataset csv:PATH: datasets.CSVLayout): the PyTorch module then has TABLE_COLUMNS and
// encode_rows, which turns rows of the table's cells into the model's input as predict
// does.
func WithTable(layout []datasets.CSVColumn) Option {
	return func(o *exportOptions) { o.table = layout }
}

// WithClassNames names the model's classes, class 0 first (a checkpoint's ClassNames):
// the PyTorch module's CLASSES and the parameter file's "privtrain.classes". There must
// be one per class, each as datasets.CheckClassNames accepts. Without it the classes are
// named by their numbers, "0", "1", ….
func WithClassNames(names []string) Option {
	return func(o *exportOptions) { o.classes = names }
}

// options applies opts for m, checking the class names against its classes.
func options(m *nn.Model, opts []Option) (exportOptions, error) {
	var o exportOptions
	for _, opt := range opts {
		opt(&o)
	}
	k := m.NumClasses()
	if o.classes == nil {
		o.classes = make([]string, k)
		for i := range o.classes {
			o.classes[i] = strconv.Itoa(i)
		}
		return o, nil
	}
	if len(o.classes) != k {
		return o, fmt.Errorf("nn: export: %d class names for a model of %d classes", len(o.classes), k)
	}
	if err := datasets.CheckClassNames(o.classes); err != nil {
		return o, fmt.Errorf("nn: export: class names: %w", err)
	}
	return o, nil
}
