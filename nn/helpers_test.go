package nn_test

import (
	"math"
	"slices"
	"testing"

	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/training"
)

func newModel(t testing.TB, spec nn.Spec, batch int, opts ...nn.Option) *nn.Model {
	t.Helper()
	m, err := nn.New(spec, batch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// firstDiff returns the first index where a and b differ bitwise (0 for different
// lengths), -1 if none.
func firstDiff(a, b []float64) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

func seedPtr(s uint64) *uint64 { return &s }

func newTrainer(t testing.TB, m *nn.Model, cfg training.TrainerConfig) *training.Trainer {
	t.Helper()
	tr, err := training.NewTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func layoutEq(a, b []nn.ParamInfo) bool {
	return slices.EqualFunc(a, b, func(x, y nn.ParamInfo) bool { return x.Name == y.Name && slices.Equal(x.Shape, y.Shape) })
}
