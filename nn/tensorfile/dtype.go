package tensorfile

import "fmt"

// DType is the element type of a Tensor, named as in safetensors.
//
// The constants are declared in safetensors' own order (its Rust Dtype enum), which is
// also the order its writer uses to lay tensors out: descending DType, then by name.
type DType uint8

// The safetensors element types. Every one is little-endian and byte-sized or wider;
// the sub-byte types of later safetensors versions (F4, F6_*) are not supported.
const (
	Bool       DType = iota + 1 // BOOL: one byte, 0 or 1
	Uint8                       // U8
	Int8                        // I8
	Float8E5M2                  // F8_E5M2
	Float8E4M3                  // F8_E4M3
	Int16                       // I16
	Uint16                      // U16
	Float16                     // F16
	BFloat16                    // BF16
	Int32                       // I32
	Uint32                      // U32
	Float32                     // F32
	Float64                     // F64
	Int64                       // I64
	Uint64                      // U64
)

var dtypeNames = [...]string{
	Bool: "BOOL", Uint8: "U8", Int8: "I8", Float8E5M2: "F8_E5M2", Float8E4M3: "F8_E4M3",
	Int16: "I16", Uint16: "U16", Float16: "F16", BFloat16: "BF16", Int32: "I32",
	Uint32: "U32", Float32: "F32", Float64: "F64", Int64: "I64", Uint64: "U64",
}

var dtypeSizes = [...]int{
	Bool: 1, Uint8: 1, Int8: 1, Float8E5M2: 1, Float8E4M3: 1,
	Int16: 2, Uint16: 2, Float16: 2, BFloat16: 2, Int32: 4,
	Uint32: 4, Float32: 4, Float64: 8, Int64: 8, Uint64: 8,
}

// String returns the safetensors name of d, e.g. "F64".
func (d DType) String() string {
	if !d.valid() {
		return fmt.Sprintf("DType(%d)", uint8(d))
	}
	return dtypeNames[d]
}

// Size returns the number of bytes of one element, or 0 for an invalid DType.
func (d DType) Size() int {
	if !d.valid() {
		return 0
	}
	return dtypeSizes[d]
}

func (d DType) valid() bool { return d >= Bool && d <= Uint64 }

// parseDType maps a safetensors dtype name to a DType.
func parseDType(name string) (DType, bool) {
	for d := Bool; d <= Uint64; d++ {
		if dtypeNames[d] == name {
			return d, true
		}
	}
	return 0, false
}
