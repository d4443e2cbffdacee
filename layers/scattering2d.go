package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/scatter"
)

// Scattering2D is the order-2 2-D wavelet scattering transform with J scales and L angles
// (Kymatio's Scattering2D, the ScatterNet front end of Tramèr & Boneh 2021; see package
// scatter): C×H×W images become C·(1 + J·L + L²·J(J−1)/2) channels of H/2^J × W/2^J.
// It has no parameters and does not depend on the data.
//
// It is a FrontEnd: as a network's first layer(s), nn runs it outside the trainable
// network, and training.Trainer computes the features of the training and test sets once,
// before the first step, rather than in every step. The graph Apply builds is the reference: direct convolutions, slow and memory-hungry (its
// im2col holds H·W·(padded H·W) values per image and filter group), meant for checking
// and for small batches.
type Scattering2D struct {
	J, L int
}

// Kind is "scattering2d".
func (Scattering2D) Kind() string { return "scattering2d" }

// OutputShape is [C·K, H/2^J, W/2^J] for input [C, H, W], K = 1 + J·L + L²·J(J−1)/2;
// H and W must be at least 2^J.
func (l Scattering2D) OutputShape(in []int) ([]int, error) {
	if len(in) != 3 {
		return nil, fmt.Errorf("scattering2d: input shape %v, want [C H W]", in)
	}
	out, err := scatter.OutputShape(l.J, l.L, in[0], in[1], in[2])
	if err != nil {
		return nil, fmt.Errorf("scattering2d: %w", err)
	}
	return out, nil
}

// Params is nil: the filters are fixed.
func (Scattering2D) Params([]int) []ParamSpec { return nil }

// NewTransform makes Scattering2D a FrontEnd: scatter.Scattering's Transform of a batch
// of [C, H, W] images, parallel over GOMAXPROCS goroutines. nn runs a leading
// Scattering2D this way, once per dataset, instead of as a graph in every step.
func (l Scattering2D) NewTransform(in []int) (func(x []float32) ([]float32, error), error) {
	if _, err := l.OutputShape(in); err != nil {
		return nil, err
	}
	s, err := scatter.New(l.J, l.L, in[1], in[2])
	if err != nil {
		return nil, fmt.Errorf("scattering2d: %w", err)
	}
	C := in[0]
	return func(x []float32) ([]float32, error) {
		out, err := s.Transform(x, C)
		if err != nil {
			return nil, fmt.Errorf("scattering2d: %w", err)
		}
		return out, nil
	}, nil
}

var _ FrontEnd = Scattering2D{}

// Apply adds the transform to the graph of x [B, C, H, W] as Kymatio defines it, but in the
// spatial domain: reflection padding by slices and concatenation, each circular
// convolution with a filter of the padded grid (the inverse DFT of the bank's spectrum) as
// Gorgonia's Conv2d of the periodically extended map, subsampling as the convolution's
// stride, modulus as sqrt(re² + im²), and the border of one coarse pixel sliced off. Its
// gradient is not defined where a modulus is 0; the layer is meant to come first, where
// nothing below it needs one.
func (l Scattering2D) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	xs := x.Shape()
	if len(xs) != 4 {
		return nil, nil, fmt.Errorf("scattering2d: input node shape %v, want [B C H W]", xs)
	}
	if dt := x.Dtype(); dt != tensor.Float64 && dt != tensor.Float32 {
		return nil, nil, fmt.Errorf("scattering2d: input dtype %v, want float32 or float64", dt)
	}
	B, C, H, W := xs[0], xs[1], xs[2], xs[3]
	s, err := scatter.New(l.J, l.L, H, W)
	if err != nil {
		return nil, nil, fmt.Errorf("scattering2d: %w", err)
	}
	g := &scatterGraph{s: s, dt: x.Dtype(), g: x.Graph()}
	out, err := g.build(x, B, C)
	if err != nil {
		return nil, nil, fmt.Errorf("scattering2d: %w", err)
	}
	return out, nil, nil
}

// scatterGraph builds the reference graph of one Scattering.
type scatterGraph struct {
	s  *scatter.Scattering
	dt tensor.Dtype
	g  *G.ExprGraph
}

func (sg *scatterGraph) build(x *G.Node, B, C int) (*G.Node, error) {
	s := sg.s
	J, L := s.J, s.L
	P := B * C
	u, err := G.Reshape(x, tensor.Shape{P, 1, s.H, s.W})
	if err != nil {
		return nil, err
	}
	M, N := s.PaddedSize()
	top, left := (M-s.H)/2, (N-s.W)/2
	if u, err = sg.reflectPad(u, 2, top, M, s.H); err != nil {
		return nil, err
	}
	if u, err = sg.reflectPad(u, 3, left, N, s.W); err != nil {
		return nil, err
	}
	bank := s.Bank
	parts := []*G.Node{}
	s0, err := sg.lowpass(u, P, 1, 0)
	if err != nil {
		return nil, err
	}
	parts = append(parts, s0)
	// Order 1, grouped by scale: U1[j1] is [P, L, M/2^j1, N/2^j1].
	u1 := make([]*G.Node, J)
	for j1 := 0; j1 < J; j1++ {
		if u1[j1], err = sg.bandpass(u, bank.Psi[j1*L:(j1+1)*L], 0, j1); err != nil {
			return nil, err
		}
		s1, err := sg.lowpass(u1[j1], P, L, j1)
		if err != nil {
			return nil, err
		}
		parts = append(parts, s1)
	}
	// Order 2: for each j1, every ℓ1, then (j2, ℓ2) for j2 > j1, Kymatio's order.
	oh, ow := M>>J-2, N>>J-2
	for j1 := 0; j1 < J-1; j1++ {
		m, n := M>>j1, N>>j1
		v, err := G.Reshape(u1[j1], tensor.Shape{P * L, 1, m, n})
		if err != nil {
			return nil, err
		}
		var byJ2 []*G.Node
		for j2 := j1 + 1; j2 < J; j2++ {
			u2, err := sg.bandpass(v, bank.Psi[j2*L:(j2+1)*L], j1, j2)
			if err != nil {
				return nil, err
			}
			s2, err := sg.lowpass(u2, P*L, L, j2)
			if err != nil {
				return nil, err
			}
			byJ2 = append(byJ2, s2)
		}
		s2 := byJ2[0]
		if len(byJ2) > 1 {
			if s2, err = G.Concat(1, byJ2...); err != nil {
				return nil, err
			}
		}
		if s2, err = G.Reshape(s2, tensor.Shape{P, L * (J - 1 - j1) * L, oh, ow}); err != nil {
			return nil, err
		}
		parts = append(parts, s2)
	}
	all, err := G.Concat(1, parts...)
	if err != nil {
		return nil, err
	}
	return G.Reshape(all, tensor.Shape{B, C * s.Channels(), oh, ow})
}

// reflectPad pads axis (2 or 3) of u from n to size values, before pixels first,
// mirroring without repeating the edge (numpy's "reflect").
func (sg *scatterGraph) reflectPad(u *G.Node, axis, before, size, n int) (*G.Node, error) {
	var pieces []*G.Node
	slice := func(a, b int) error {
		sl := make([]tensor.Slice, axis+1)
		sl[axis] = G.S(a, b)
		p, err := G.Slice(u, sl...)
		if err != nil {
			return err
		}
		shape := u.Shape().Clone()
		shape[axis] = b - a
		if p, err = G.Reshape(p, shape); err != nil { // a one-wide slice may drop the axis
			return err
		}
		pieces = append(pieces, p)
		return nil
	}
	for i := 0; i < size; {
		if i == before { // the image itself
			if err := slice(0, n); err != nil {
				return nil, err
			}
			i += n
			continue
		}
		src := scatter.Reflect(i-before, n)
		if err := slice(src, src+1); err != nil {
			return nil, err
		}
		i++
	}
	return G.Concat(axis, pieces...)
}

// circular correlates each map of u [Q, 1, m, n] with the flipped filters (so that it
// convolves circularly) at stride k: the map is extended periodically to (2m−1)×(2n−1)
// and Conv2d slides the m×n kernels over it. kernels holds F filters of m×n values.
//
// The kernel node is named after what it holds (name, the transform and the grid): the
// graph merges unnamed input nodes of equal shape into one, which silently gave every
// filter group of one shape the values of the first.
func (sg *scatterGraph) circular(u *G.Node, name string, kernels [][]float64, m, n, k int) (*G.Node, error) {
	ext := u
	for _, axis := range []int{2, 3} {
		sl := make([]tensor.Slice, axis+1)
		size := m
		if axis == 3 {
			size = n
		}
		sl[axis] = G.S(1, size)
		tail, err := G.Slice(ext, sl...)
		if err != nil {
			return nil, err
		}
		if size == 2 { // a one-wide slice may drop the axis
			shape := ext.Shape().Clone()
			shape[axis] = 1
			if tail, err = G.Reshape(tail, shape); err != nil {
				return nil, err
			}
		}
		if ext, err = G.Concat(axis, tail, ext); err != nil {
			return nil, err
		}
	}
	F := len(kernels)
	backing := make([]float64, 0, F*m*n)
	for _, h := range kernels {
		// Conv2d correlates: kernel(a, b) = h(m−1−a, n−1−b) makes the output at p
		// Σ_t x(p − t mod m) h(t), the circular convolution.
		for a := 0; a < m; a++ {
			for b := 0; b < n; b++ {
				backing = append(backing, h[(m-1-a)*n+(n-1-b)])
			}
		}
	}
	M, N := sg.s.PaddedSize()
	full := fmt.Sprintf("scattering2d.J%d.L%d.%dx%d.%s", sg.s.J, sg.s.L, M, N, name)
	w := G.NewTensor(sg.g, sg.dt, 4, G.WithShape(F, 1, m, n), G.WithName(full), G.WithValue(sg.tensor(backing, F, 1, m, n)))
	return G.Conv2d(ext, w, tensor.Shape{m, n}, []int{0, 0}, []int{k, k}, []int{1, 1})
}

func (sg *scatterGraph) tensor(v []float64, shape ...int) tensor.Tensor {
	if sg.dt == tensor.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

// bandpass is |u ⋆ ψ| for each wavelet, each map of u [Q, 1, m, n] at resolution from,
// subsampled to resolution to: [Q, len(psi), m/2^(to−from), n/2^(to−from)].
func (sg *scatterGraph) bandpass(u *G.Node, psi []scatter.Wavelet, from, to int) (*G.Node, error) {
	M, N := sg.s.PaddedSize()
	m, n := M>>from, N>>from
	F := len(psi)
	kernels := make([][]float64, 2*F)
	for i, w := range psi {
		h := scatter.Spatial(w.Levels[from], m, n)
		re, im := make([]float64, m*n), make([]float64, m*n)
		for t, v := range h {
			re[t], im[t] = real(v), imag(v)
		}
		kernels[i], kernels[F+i] = re, im
	}
	z, err := sg.circular(u, fmt.Sprintf("psi.j%d.r%d", psi[0].J, from), kernels, m, n, 1<<(to-from))
	if err != nil {
		return nil, err
	}
	re, err := G.Slice(z, nil, G.S(0, F))
	if err != nil {
		return nil, err
	}
	im, err := G.Slice(z, nil, G.S(F, 2*F))
	if err != nil {
		return nil, err
	}
	if F == 1 { // a one-wide slice may drop the axis
		zs := z.Shape()
		if re, err = G.Reshape(re, tensor.Shape{zs[0], 1, zs[2], zs[3]}); err != nil {
			return nil, err
		}
		if im, err = G.Reshape(im, tensor.Shape{zs[0], 1, zs[2], zs[3]}); err != nil {
			return nil, err
		}
	}
	re2, err := G.Square(re)
	if err != nil {
		return nil, err
	}
	im2, err := G.Square(im)
	if err != nil {
		return nil, err
	}
	sum, err := G.Add(re2, im2)
	if err != nil {
		return nil, err
	}
	return G.Sqrt(sum)
}

// lowpass is u ⋆ φ subsampled to resolution J without its border of one coarse pixel, for
// u [Q, R, m, n] at resolution res: [Q, R, H/2^J, W/2^J]. For a real map only the real part
// of φ's spatial filter contributes to the real part Kymatio keeps.
func (sg *scatterGraph) lowpass(u *G.Node, Q, R, res int) (*G.Node, error) {
	s := sg.s
	M, N := s.PaddedSize()
	m, n := M>>res, N>>res
	v, err := G.Reshape(u, tensor.Shape{Q * R, 1, m, n})
	if err != nil {
		return nil, err
	}
	h := scatter.Spatial(s.Bank.Phi[res], m, n)
	re := make([]float64, m*n)
	for t, c := range h {
		re[t] = real(c)
	}
	z, err := sg.circular(v, fmt.Sprintf("phi.r%d", res), [][]float64{re}, m, n, 1<<(s.J-res))
	if err != nil {
		return nil, err
	}
	cm, cn := M>>s.J, N>>s.J
	if z, err = G.Slice(z, nil, nil, G.S(1, cm-1), G.S(1, cn-1)); err != nil {
		return nil, err
	}
	return G.Reshape(z, tensor.Shape{Q, R, cm - 2, cn - 2})
}

// scatteringSettings are a Scattering2D's stored settings: {"j":2,"l":8}.
type scatteringSettings struct {
	J int `json:"j"`
	L int `json:"l"`
}

func init() {
	registerSettings(func(l Scattering2D) scatteringSettings {
		return scatteringSettings{J: l.J, L: l.L}
	}, func(s scatteringSettings) (Scattering2D, error) {
		return Scattering2D{J: s.J, L: s.L}, nil
	})
}
