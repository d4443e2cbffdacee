package gemm

import "math"

// Activations on slices: y = tanh x and y = σ(x) = 1/(1 + e^−x), optionally after a bias
// added per column, and their derivatives from the output, dz = g·f'(y). float32 runs on
// the generated AVX-512 or AVX2 kernels (gen_act.go) and elsewhere on a pure-Go loop of
// the same method, accurate to a few ulps over the whole float32 range (act_test.go);
// float64 uses math.Tanh and math.Exp.

// actLanes is the block the float32 kernels take: a multiple of both vector widths.
const actLanes = 16

// Tanh writes dst[i] = tanh(src[i]); dst may be src. It panics when dst is shorter.
func Tanh[T Float](dst, src []T) { activate(dst, src, nil, false) }

// Sigmoid writes dst[i] = 1/(1 + exp(−src[i])); dst may be src.
func Sigmoid[T Float](dst, src []T) { activate(dst, src, nil, true) }

// TanhBias replaces x, rows of len(bias) values, by tanh(x + bias) in place: the
// activation of a Conv2D or Dense output whose GEMM did not add the bias. len(x) must be a
// multiple of len(bias).
func TanhBias[T Float](x, bias []T) { activateBias(x, bias, false) }

// SigmoidBias is TanhBias for σ.
func SigmoidBias[T Float](x, bias []T) { activateBias(x, bias, true) }

// TanhGrad writes dz[i] = g[i]·(1 − y[i]²), the gradient at tanh's input from the gradient
// g at its output y. dz may be g.
func TanhGrad[T Float](dz, g, y []T) { activationGrad(dz, g, y, false) }

// SigmoidGrad writes dz[i] = g[i]·y[i]·(1 − y[i]) for y = σ(x). dz may be g.
func SigmoidGrad[T Float](dz, g, y []T) { activationGrad(dz, g, y, true) }

func activate[T Float](dst, src, bias []T, sigmoid bool) {
	n := len(src)
	if n == 0 {
		return
	}
	_ = dst[n-1]
	if bias != nil {
		_ = bias[n-1]
	}
	switch d := any(dst).(type) {
	case []float32:
		s, b := any(src).([]float32), any(bias).([]float32)
		if k := vectorAct(sigmoid).forward; k != nil {
			kernelBlocks(k, d[:n], s, b)
			return
		}
		f := tanh32
		if sigmoid {
			f = sigmoid32
		}
		if b == nil {
			for i, v := range s {
				d[i] = f(v)
			}
		} else {
			for i, v := range s {
				d[i] = f(v + b[i])
			}
		}
	case []float64:
		s, b := any(src).([]float64), any(bias).([]float64)
		for i, v := range s {
			if b != nil {
				v += b[i]
			}
			if sigmoid {
				d[i] = 1 / (1 + math.Exp(-v))
			} else {
				d[i] = math.Tanh(v)
			}
		}
	}
}

// kernelBlocks runs k over whole blocks and the last partial block through a zero-padded
// copy.
func kernelBlocks(k func(dst, src, bias *float32, n int), dst, src, bias []float32) {
	n := len(src)
	full := n &^ (actLanes - 1)
	var bp *float32
	if full > 0 {
		if bias != nil {
			bp = &bias[0]
		}
		k(&dst[0], &src[0], bp, full)
	}
	if full == n {
		return
	}
	var ts, tb, td [actLanes]float32
	copy(ts[:], src[full:])
	bp = nil
	if bias != nil {
		copy(tb[:], bias[full:n])
		bp = &tb[0]
	}
	k(&td[0], &ts[0], bp, actLanes)
	copy(dst[full:n], td[:])
}

func activateBias[T Float](x, bias []T, sigmoid bool) {
	c := len(bias)
	if c == 0 || len(x) == 0 {
		return
	}
	if len(x)%c != 0 {
		panic("gemm: activation input is not whole rows of the bias length")
	}
	// A kernel reads a bias vector beside each input vector: repeat the bias over a block
	// of whole rows that is a multiple of the lanes (at most 1024 values), or go row by
	// row when the rows are long.
	const maxRep = 1024
	period := c
	for period%actLanes != 0 {
		period += c
	}
	if period > maxRep {
		for r := 0; r < len(x); r += c {
			activate(x[r:r+c], x[r:r+c], bias, sigmoid)
		}
		return
	}
	var buf [maxRep]T
	rep := buf[:maxRep/period*period]
	for i := range rep {
		rep[i] = bias[i%c]
	}
	for r := 0; r < len(x); r += len(rep) {
		e := min(r+len(rep), len(x))
		activate(x[r:e], x[r:e], rep[:e-r], sigmoid)
	}
}

func activationGrad[T Float](dz, g, y []T, sigmoid bool) {
	n := len(y)
	if n == 0 {
		return
	}
	_, _ = dz[n-1], g[n-1]
	if y32, ok := any(y).([]float32); ok {
		if k := vectorAct(sigmoid).grad; k != nil {
			d, g32 := any(dz).([]float32), any(g).([]float32)
			full := n &^ (actLanes - 1)
			if full > 0 {
				k(&d[0], &g32[0], &y32[0], full)
			}
			if full < n {
				var tg, ty, td [actLanes]float32
				copy(tg[:], g32[full:n])
				copy(ty[:], y32[full:])
				k(&td[0], &tg[0], &ty[0], actLanes)
				copy(d[full:n], td[:])
			}
			return
		}
	}
	if sigmoid {
		for i, v := range y {
			dz[i] = g[i] * v * (1 - v)
		}
		return
	}
	for i, v := range y {
		dz[i] = g[i] * (1 - v*v)
	}
}

// actKernels are the vector kernels of one activation on one CPU path.
type actKernels struct {
	forward func(dst, src, bias *float32, n int)
	grad    func(dz, g, y *float32, n int)
}

// The AVX-512 and AVX2 kernels of tanh (index 0) and the sigmoid (index 1).
var (
	actAVX512 = [2]actKernels{{tanh32AVX512, tanhGrad32AVX512}, {sigmoid32AVX512, sigmoidGrad32AVX512}}
	actAVX2   = [2]actKernels{{tanh32AVX2, tanhGrad32AVX2}, {sigmoid32AVX2, sigmoidGrad32AVX2}}
)

// vectorAct returns the kernels of tanh or the sigmoid on the current CPU path: nil functions
// where it has none.
func vectorAct(sigmoid bool) actKernels {
	i := 0
	if sigmoid {
		i = 1
	}
	switch {
	case useAVX512():
		return actAVX512[i]
	case useAVX2():
		return actAVX2[i]
	}
	return actKernels{}
}

// expNeg32 is exp(−y) for y in [0, expLimit] (or NaN) by the kernels' method: n =
// round(−y·log₂e), s = y + n·ln2, the Taylor polynomial of exp(−s), times 2ⁿ in two
// exponent-field factors so that a subnormal result is rounded once.
func expNeg32(y float32) float32 {
	n := float32(math.RoundToEven(float64(y * negLog2E)))
	s := y + n*ln2Hi
	s += n * ln2Lo
	p := expNegPoly[7]
	for k := 6; k >= 0; k-- {
		p = p*s + expNegPoly[k]
	}
	if n != n {
		return n
	}
	ni := int32(n)
	n1 := ni >> 1
	n2 := ni - n1
	p *= math.Float32frombits(uint32(n1+127) << 23)
	return p * math.Float32frombits(uint32(n2+127)<<23)
}

// tanh32 is tanh x by the kernels' method (gen_act.go).
func tanh32(x float32) float32 {
	bits := math.Float32bits(x)
	a := math.Float32frombits(bits &^ (1 << 31))
	var t float32
	switch {
	case a != a:
		return x
	case a < tanhSmall:
		u := a * a
		p := tanhPoly[len(tanhPoly)-1]
		for k := len(tanhPoly) - 2; k >= 0; k-- {
			p = p*u + tanhPoly[k]
		}
		t = a + a*u*p
	default:
		e := expNeg32(min(2*a, expLimit))
		t = 1 - 2*(e/(1+e))
	}
	return math.Float32frombits(math.Float32bits(t) | bits&(1<<31))
}

// sigmoid32 is 1/(1 + e^−x) by the kernels' method.
func sigmoid32(x float32) float32 {
	if x != x {
		return x
	}
	e := expNeg32(min(float32(math.Abs(float64(x))), expLimit))
	if x < 0 {
		return e / (1 + e)
	}
	return 1 / (1 + e)
}
