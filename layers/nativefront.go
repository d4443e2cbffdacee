package layers

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/privtrain/privtrain/internal/num"
)

// Skippable says whether l is a layer of this package that has no parameters and maps
// each example on its own by a fixed function: GroupNorm with NoAffine, Flatten, ReLU,
// Tanh, MaxPool2D, AvgPool2D. Following a FrontEnd, such layers compute fixed features of
// fixed features, so nn computes them once with the front end (NewNativeAfter,
// NewNativeFront). A GroupNorm with γ and β is not skippable: it learns.
func Skippable(l Layer) bool {
	switch l := l.(type) {
	case GroupNorm:
		return l.NoAffine
	case *GroupNorm:
		return l != nil && l.NoAffine
	case Flatten, ReLU, Tanh, MaxPool2D, AvgPool2D:
		return true
	case *Flatten, *ReLU, *Tanh, *MaxPool2D, *AvgPool2D:
		return !reflect.ValueOf(l).IsNil()
	}
	return false
}

// nativeFrontBatch is the number of examples a NativeFront transform runs per program.
const nativeFrontBatch = 64

// NewNativeFront returns the transform of layers[:skip] (Skippable layers) on float32
// examples of CHW shape in, as the native engine computes them inside the network layers:
// it maps n·prod(in) values to n·outLen values, each example in the layout in which a
// NewNativeAfter(layers, in, …, skip) program reads its Input. The values are bitwise
// those that NewNative's Forward computes at that point, since the same ops run. The
// transform is deterministic and safe for concurrent use.
func NewNativeFront(layers []Layer, in []int, skip int) (transform func([]float32) ([]float32, error), outLen int, err error) {
	// Parameters only for compiling the layers after skip; their ops never run here.
	params := make([][][]float32, len(layers))
	shape := in
	for i, l := range layers {
		if l == nil {
			return nil, 0, fmt.Errorf("layers: layer %d is nil", i)
		}
		for _, p := range l.Params(shape) {
			params[i] = append(params[i], make([]float32, num.Prod(p.Shape)))
		}
		if shape, err = l.OutputShape(shape); err != nil {
			return nil, 0, fmt.Errorf("layers: layer %d: %w", i, err)
		}
	}
	first, err := newNativeAfter(layers, in, nativeFrontBatch, params, false, skip, true)
	if err != nil {
		return nil, 0, err
	}
	inLen, outLen := num.Prod(in), first.InputLen()
	pool := sync.Pool{New: func() any {
		nv, err := newNativeAfter(layers, in, nativeFrontBatch, params, false, skip, true)
		if err != nil {
			panic(fmt.Sprintf("layers: native front end compiled once, now: %v", err))
		}
		return nv
	}}
	pool.Put(first)
	transform = func(x []float32) ([]float32, error) {
		if len(x)%inLen != 0 {
			return nil, fmt.Errorf("layers: %d values are not examples of %v", len(x), in)
		}
		n := len(x) / inLen
		out := make([]float32, n*outLen)
		nv := pool.Get().(*Native[float32])
		defer pool.Put(nv)
		src, dst := nv.frontInput(), nv.Input()
		for lo := 0; lo < n; lo += nativeFrontBatch {
			m := min(nativeFrontBatch, n-lo)
			copy(src, x[lo*inLen:(lo+m)*inLen])
			for a := 0; a < m; a += nv.Chunk() {
				nv.frontForward(0, a, min(m, a+nv.Chunk()))
			}
			copy(out[lo*outLen:(lo+m)*outLen], dst[:m*outLen])
		}
		return out, nil
	}
	return transform, outLen, nil
}
