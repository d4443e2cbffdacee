package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Initializer draws a parameter tensor's initial values.
type Initializer int

const (
	// GlorotUniform draws from U(-l, l) with l = sqrt(6/(fanIn+fanOut)) (Glorot & Bengio
	// 2010), the Keras default for kernels and what the TF Privacy MNIST tutorial uses.
	GlorotUniform Initializer = iota
	// HeNormal draws from N(0, 2/fanIn) (He et al. 2015), suited to ReLU networks.
	HeNormal
	// Zeros sets every value to 0, the Keras default for biases.
	Zeros
	// Ones sets every value to 1: the scale of a normalisation layer (GroupNorm), not a
	// kernel initializer (a Dense or Conv2D checkpoint cannot store it).
	Ones
)

func (in Initializer) String() string {
	switch in {
	case GlorotUniform:
		return "glorot-uniform"
	case HeNormal:
		return "he-normal"
	case Zeros:
		return "zeros"
	case Ones:
		return "ones"
	}
	return fmt.Sprintf("Initializer(%d)", int(in))
}

// Fill overwrites dst with initial values drawn from rng.
func (in Initializer) Fill(dst []float64, fanIn, fanOut int, rng *rand.Rand) error {
	switch in {
	case GlorotUniform:
		if fanIn+fanOut <= 0 {
			return fmt.Errorf("layers: glorot-uniform with fan-in %d and fan-out %d", fanIn, fanOut)
		}
		l := math.Sqrt(6 / float64(fanIn+fanOut))
		for j := range dst {
			dst[j] = l * (2*rng.Float64() - 1)
		}
	case HeNormal:
		if fanIn <= 0 {
			return fmt.Errorf("layers: he-normal with fan-in %d", fanIn)
		}
		s := math.Sqrt(2 / float64(fanIn))
		for j := range dst {
			dst[j] = s * rng.NormFloat64()
		}
	case Zeros:
		clear(dst)
	case Ones:
		for j := range dst {
			dst[j] = 1
		}
	default:
		return fmt.Errorf("layers: unknown initializer %v", in)
	}
	return nil
}
