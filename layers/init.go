package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Initializer draws a parameter tensor's initial values. It is a value, so that it can
// carry parameters (Constant{Value: 0.25}, PyTorch's PReLU start); a layer names one per
// ParamSpec. String is the name a Dense's or Conv2D's weight initializer is stored under in
// a checkpoint's architecture ("glorot-uniform", "he-normal", "zeros", "constant:0.25").
type Initializer interface {
	// Fill overwrites dst with initial values drawn from rng, for a tensor with fan-in
	// fanIn and fan-out fanOut; an error says why the fans do not fit the initializer.
	Fill(dst []float64, fanIn, fanOut int, rng *rand.Rand) error
	String() string
}

// GlorotUniform draws from U(-l, l) with l = sqrt(6/(fanIn+fanOut)) (Glorot & Bengio 2010),
// the Keras default for kernels and what the TF Privacy MNIST tutorial uses. A nil
// Initializer (a layer's zero value, a ParamSpec without Init) means GlorotUniform.
type GlorotUniform struct{}

// HeNormal draws from N(0, 2/fanIn) (He et al. 2015), suited to ReLU networks.
type HeNormal struct{}

// Zeros sets every value to 0, the Keras default for biases.
type Zeros struct{}

// Ones sets every value to 1: the scale of a normalisation layer (GroupNorm), not a
// kernel initializer (a Dense or Conv2D checkpoint cannot store it).
type Ones struct{}

// Constant sets every value to Value (PyTorch's PReLU starts its slopes at 0.25).
type Constant struct{ Value float64 }

var (
	_ Initializer = GlorotUniform{}
	_ Initializer = HeNormal{}
	_ Initializer = Zeros{}
	_ Initializer = Ones{}
	_ Initializer = Constant{}
)

func (GlorotUniform) String() string { return "glorot-uniform" }
func (HeNormal) String() string      { return "he-normal" }
func (Zeros) String() string         { return "zeros" }
func (Ones) String() string          { return "ones" }

// String is "constant:" and the shortest decimal that reads back as Value.
func (c Constant) String() string {
	return constantPrefix + strconv.FormatFloat(c.Value, 'g', -1, 64)
}

const constantPrefix = "constant:"

// Fill draws from U(-l, l), l = sqrt(6/(fanIn+fanOut)).
func (GlorotUniform) Fill(dst []float64, fanIn, fanOut int, rng *rand.Rand) error {
	if fanIn+fanOut <= 0 {
		return fmt.Errorf("layers: glorot-uniform with fan-in %d and fan-out %d", fanIn, fanOut)
	}
	l := math.Sqrt(6 / float64(fanIn+fanOut))
	for j := range dst {
		dst[j] = l * (2*rng.Float64() - 1)
	}
	return nil
}

// Fill draws from N(0, 2/fanIn).
func (HeNormal) Fill(dst []float64, fanIn, _ int, rng *rand.Rand) error {
	if fanIn <= 0 {
		return fmt.Errorf("layers: he-normal with fan-in %d", fanIn)
	}
	s := math.Sqrt(2 / float64(fanIn))
	for j := range dst {
		dst[j] = s * rng.NormFloat64()
	}
	return nil
}

// Fill clears dst.
func (Zeros) Fill(dst []float64, _, _ int, _ *rand.Rand) error {
	clear(dst)
	return nil
}

// Fill sets dst to 1.
func (Ones) Fill(dst []float64, _, _ int, _ *rand.Rand) error {
	return Constant{Value: 1}.Fill(dst, 0, 0, nil)
}

// Fill sets dst to Value, which must be finite.
func (c Constant) Fill(dst []float64, _, _ int, _ *rand.Rand) error {
	if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) {
		return fmt.Errorf("layers: constant initializer %v", c.Value)
	}
	for j := range dst {
		dst[j] = c.Value
	}
	return nil
}

// initOrDefault is in, or GlorotUniform for nil.
func initOrDefault(in Initializer) Initializer {
	if in == nil {
		return GlorotUniform{}
	}
	return in
}

// Fill overwrites dst with p's initial values: p.Init's (GlorotUniform when nil) with
// p's fans.
func (p ParamSpec) Fill(dst []float64, rng *rand.Rand) error {
	return initOrDefault(p.Init).Fill(dst, p.FanIn, p.FanOut, rng)
}

// kernelInit parses a stored weight initializer: a kernel initializer's String (Ones,
// a normalisation layer's scale, is not one). "glorot-uniform", the default, gives nil, as
// the zero value of the layer that stored it holds.
func kernelInit(s string) (Initializer, error) {
	switch s {
	case "", GlorotUniform{}.String(): // "": left out of a hand-written architecture
		return nil, nil
	case HeNormal{}.String():
		return HeNormal{}, nil
	case Zeros{}.String():
		return Zeros{}, nil
	}
	if v, ok := strings.CutPrefix(s, constantPrefix); ok {
		c, err := strconv.ParseFloat(v, 64)
		if err == nil && !math.IsNaN(c) && !math.IsInf(c, 0) {
			return Constant{Value: c}, nil
		}
	}
	return nil, fmt.Errorf("unknown initializer %q", s)
}

// kernelInitName is the stored name of a weight initializer (nil: glorot-uniform).
func kernelInitName(in Initializer) string { return initOrDefault(in).String() }
