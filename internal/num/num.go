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

// Number is any element type privtrain converts between: floats of either width, and
// the integer types checkpoints store indices and bytes in.
type Number interface {
	~float32 | ~float64 | ~int | ~int64 | ~uint8
}

// Convert copies src into dst element by element, converting each value to D; dst must
// be at least as long as src. It is privtrain's one conversion routine (float64
// parameters to the model's dtype and back, permutations to int64 and back); callers
// check ranges first where a conversion could lose information.
func Convert[D, S Number](dst []D, src []S) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = D(x)
	}
}

// Converted returns a new slice holding src converted to D (see Convert).
func Converted[D, S Number](src []S) []D {
	dst := make([]D, len(src))
	Convert(dst, src)
	return dst
}
