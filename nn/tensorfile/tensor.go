package tensorfile

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Tensor is one named array of a checkpoint: its element type, its shape (row-major,
// outermost dimension first; an empty shape is a scalar) and its elements as raw
// little-endian bytes, exactly as they are stored in the file.
//
// Build tensors with F64, F32, I64 or U8 and read them back with Float64s, Float32s,
// Int64s or Uint8s; other DTypes can be filled through Data directly.
type Tensor struct {
	DType DType
	Shape []int
	Data  []byte
}

// F64 returns a float64 tensor of the given shape holding a copy of v.
// Encode rejects it if len(v) is not the product of shape.
func F64(shape []int, v []float64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return Tensor{DType: Float64, Shape: cloneShape(shape), Data: b}
}

// F32 returns a float32 tensor of the given shape holding a copy of v.
func F32(shape []int, v []float32) Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{DType: Float32, Shape: cloneShape(shape), Data: b}
}

// I64 returns an int64 tensor of the given shape holding a copy of v.
func I64(shape []int, v []int64) Tensor {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return Tensor{DType: Int64, Shape: cloneShape(shape), Data: b}
}

// U8 returns a uint8 tensor of the given shape holding a copy of v; it is the natural
// home of opaque binary state such as a marshalled random number generator.
func U8(shape []int, v []byte) Tensor {
	return Tensor{DType: Uint8, Shape: cloneShape(shape), Data: append([]byte{}, v...)}
}

// Len returns the number of elements the shape describes, or -1 if a dimension is
// negative or the product overflows an int.
func (t Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		if d < 0 {
			return -1
		}
		if d != 0 && n > math.MaxInt/d {
			return -1
		}
		n *= d
	}
	return n
}

// Float64s decodes a F64 tensor into a new slice.
func (t Tensor) Float64s() ([]float64, error) {
	n, err := t.elements(Float64)
	if err != nil {
		return nil, err
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return v, nil
}

// Float32s decodes a F32 tensor into a new slice.
func (t Tensor) Float32s() ([]float32, error) {
	n, err := t.elements(Float32)
	if err != nil {
		return nil, err
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return v, nil
}

// Int64s decodes an I64 tensor into a new slice.
func (t Tensor) Int64s() ([]int64, error) {
	n, err := t.elements(Int64)
	if err != nil {
		return nil, err
	}
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return v, nil
}

// Uint8s returns a copy of the bytes of a U8 tensor.
func (t Tensor) Uint8s() ([]byte, error) {
	if _, err := t.elements(Uint8); err != nil {
		return nil, err
	}
	return append([]byte{}, t.Data...), nil
}

// elements checks that t has dtype want and that its data matches its shape.
func (t Tensor) elements(want DType) (int, error) {
	if t.DType != want {
		return 0, fmt.Errorf("checkpoint: tensor has dtype %v, not %v", t.DType, want)
	}
	if err := t.check(); err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	return t.Len(), nil
}

// check reports whether the tensor is well formed: a known dtype, non-negative
// dimensions, and exactly as many data bytes as shape and dtype require.
func (t Tensor) check() error {
	if !t.DType.valid() {
		return fmt.Errorf("invalid dtype %v", t.DType)
	}
	n := t.Len()
	if n < 0 {
		return fmt.Errorf("invalid shape %v", t.Shape)
	}
	size := t.DType.Size()
	if n > math.MaxInt/size {
		return fmt.Errorf("shape %v of %v overflows", t.Shape, t.DType)
	}
	if len(t.Data) != n*size {
		return fmt.Errorf("shape %v of %v needs %d data bytes, has %d", t.Shape, t.DType, n*size, len(t.Data))
	}
	return nil
}

func cloneShape(shape []int) []int { return append([]int{}, shape...) }
