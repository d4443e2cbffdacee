// Package num holds the few numeric definitions that privtrain's numeric packages share:
// the element type constraint of a network (float32 or float64), the size of one element,
// and the number of elements of a shape.
package num

// Float is the element type of a network, its taps and its products: its dtype.
type Float interface{ float32 | float64 }

// SizeOf is the size of one T in bytes.
func SizeOf[T Float]() int {
	var z T
	if _, ok := any(z).(float32); ok {
		return 4
	}
	return 8
}

// Prod is the number of elements of a tensor of the given shape: the product of its
// dimensions (1 for a scalar's empty shape).
func Prod(shape []int) int {
	n := 1
	for _, v := range shape {
		n *= v
	}
	return n
}
