package layers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/parallel"
	"github.com/privtrain/privtrain/internal/strictjson"
	"github.com/privtrain/privtrain/prior"
)

// Whitened is a fixed feature extractor followed by a whitening map learnt from images
// of a random process, never from data (package prior; the idea of DP-RandP, Tang et al.
// 2023): x ↦ base(x)·M, M = s·(C + Floor·λ₁·I)^(−1/2) for the covariance C of base's
// features of Prior's images and its largest eigenvalue λ₁ (ZCA whitening,
// prior.Whitening).
// Base is a FrontEnd layer other than a Whitened (Scattering2D) and the parameter-free
// per-example layers after it (Skippable: a GroupNorm without affine, then a Flatten),
// and must end in a flat vector of at most prior.MaxDim values; the input may have at
// most MaxWhitenedInput values (the prior's images are rendered at its size).
//
// It is itself a FrontEnd: no parameters, and the same output for the same input every
// time, whatever data it meets, so it costs no privacy; as a network's first layer nn
// runs it outside the trainable network, once per dataset. Its map is computed the first
// time a process needs it — rendering the Prior's images, their base features, the
// covariance and its inverse square root: many minutes on two cores for
// DeadLeaves{Scenes: 35000} and ScatterNet features of 28×28 images — and kept in
// prior.CacheDir (key: a SHA-256 over Base's stored settings, the input shape, the
// generator and its parameters and Floor), from where later runs load it in a second.
// A spec and a checkpoint hold the settings, not the 4·d² bytes of the map.
type Whitened struct {
	Base  []Layer
	Prior prior.DeadLeaves
	// Floor is the smoothing of the least-variance directions, a fraction of the largest
	// eigenvalue, in [prior.MinFloor, 1].
	Floor float64
}

// MaxWhitenedInput bounds the values of one input example (C·H·W) of a Whitened layer:
// with prior.MaxDim features and prior.MaxScenes scenes, it bounds the work and the
// memory (512 rendered images at a time) that a spec or checkpoint naming a prior can
// cause. 3×128×128 images fit.
const MaxWhitenedInput = 3 * 128 * 128

// Kind is "whitened".
func (Whitened) Kind() string { return "whitened" }

// OutputShape is [d]: Base's output, which must be flat.
func (l Whitened) OutputShape(in []int) ([]int, error) {
	if len(l.Base) == 0 {
		return nil, errors.New("whitened: no base layers")
	}
	if err := l.Prior.Validate(); err != nil {
		return nil, fmt.Errorf("whitened: %w", err)
	}
	if !(l.Floor >= prior.MinFloor && l.Floor <= 1) {
		return nil, fmt.Errorf("whitened: floor %v: want a number in [%g, 1]", l.Floor, prior.MinFloor)
	}
	if len(in) != 3 {
		return nil, fmt.Errorf("whitened: input shape %v, want images [C H W] for the prior's images", in)
	}
	if in[0] <= 0 || in[1] <= 0 || in[2] <= 0 || in[0] > MaxWhitenedInput || in[1] > MaxWhitenedInput || in[2] > MaxWhitenedInput || num.Prod(in) > MaxWhitenedInput {
		return nil, fmt.Errorf("whitened: input shape %v: want at most %d values an image", in, MaxWhitenedInput)
	}
	shape := in
	for j, sub := range l.Base {
		if sub == nil {
			return nil, fmt.Errorf("whitened: base layer %d is nil", j)
		}
		if _, ok := sub.(FrontEnd); j == 0 && !ok {
			return nil, fmt.Errorf("whitened: base layer 0 (%s) is not a fixed front end (FrontEnd)", sub.Kind())
		}
		if _, nested := sub.(Whitened); nested {
			return nil, fmt.Errorf("whitened: base layer %d is itself whitened", j)
		}
		if j > 0 && (!Skippable(sub) || len(sub.Params(shape)) > 0) {
			return nil, fmt.Errorf("whitened: base layer %d (%s) is not a parameter-free per-example layer", j, sub.Kind())
		}
		out, err := sub.OutputShape(shape)
		if err != nil {
			return nil, fmt.Errorf("whitened: base layer %d: %w", j, err)
		}
		shape = out
	}
	if len(shape) != 1 {
		return nil, fmt.Errorf("whitened: base output %v, want a vector (end the base with a Flatten)", shape)
	}
	if shape[0] > prior.MaxDim {
		return nil, fmt.Errorf("whitened: %d base features, more than the %d a whitening map may have", shape[0], prior.MaxDim)
	}
	return slices.Clone(shape), nil
}

// Params is nil: the map is fixed.
func (Whitened) Params([]int) []ParamSpec { return nil }

// Sublayers is Base.
func (l Whitened) Sublayers() []Layer { return l.Base }

var (
	_ FrontEnd  = Whitened{}
	_ Container = Whitened{}
)

// base returns Base's transform for input in (the FrontEnd's, then the layers after it
// as the native engine computes them: NewNativeFront, a Flatten at the end in CHW order)
// and its output length.
func (l Whitened) base(in []int) (func([]float32) ([]float32, error), int, error) {
	out, err := l.OutputShape(in)
	if err != nil {
		return nil, 0, err
	}
	first, err := l.Base[0].(FrontEnd).NewTransform(in)
	if err != nil {
		return nil, 0, fmt.Errorf("whitened: base layer 0: %w", err)
	}
	if len(l.Base) == 1 {
		return first, out[0], nil
	}
	mid, err := l.Base[0].OutputShape(in)
	if err != nil {
		return nil, 0, err
	}
	// NewNativeFront computes layers before a network's first program layer: a trailing
	// Flatten of the flat output (an identity) is that layer, and being no Dense, it
	// makes a Flatten before it write CHW order.
	rest, n, err := NewNativeFront(append(slices.Clone(l.Base[1:]), Flatten{}), mid, len(l.Base)-1)
	if err != nil {
		return nil, 0, fmt.Errorf("whitened: %w", err)
	}
	if n != out[0] {
		return nil, 0, fmt.Errorf("whitened: base gives %d values per example, want %d", n, out[0])
	}
	return func(x []float32) ([]float32, error) {
		y, err := first(x)
		if err != nil {
			return nil, err
		}
		return rest(y)
	}, n, nil
}

// whitenedKeyVersion starts the map's key; raising it retires every cached map.
//
// v3: the map by float32 Newton–Schulz iteration (about 10⁻⁵ from v2's); v2: ZCA by the
// eigen-decomposition; v1, the eigenbasis map, never released.
const whitenedKeyVersion = "privtrain whitened prior map v3\n"

// key is the SHA-256 (hex) of everything the map for input in depends on.
func (l Whitened) key(in []int) (string, error) {
	base, err := encodeLayers(l.Base)
	if err != nil {
		return "", fmt.Errorf("whitened: base %w", err)
	}
	desc, err := json.Marshal(struct {
		Base   []storedLayer `json:"base"`
		Input  []int         `json:"input"`
		Prior  string        `json:"prior"`
		Scenes int           `json:"scenes"`
		Seed   uint64        `json:"seed"`
		Floor  float64       `json:"floor"`
	}{base, in, l.Prior.Version(), l.Prior.Scenes, l.Prior.Seed, l.Floor})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(whitenedKeyVersion), desc...))
	return hex.EncodeToString(sum[:]), nil
}

// Prepare computes or loads the map for input shape in (so that NewTransform then takes
// it from memory), telling progress how far it came; it returns where the map came
// from. Commands call it to show the one-time computation.
func (l Whitened) Prepare(in []int, progress prior.Progress) (prior.CacheUse, error) {
	return l.PrepareContext(context.Background(), in, progress)
}

// PrepareContext is Prepare that stops, with ctx's error, once ctx is done.
func (l Whitened) PrepareContext(ctx context.Context, in []int, progress prior.Progress) (prior.CacheUse, error) {
	tr, d, err := l.base(in)
	if err != nil {
		return prior.CacheUse{}, err
	}
	_, use, err := l.matrixWith(ctx, in, tr, d, progress)
	return use, err
}

// matrix is the map for input shape in, from the cache or computed (prior.Map).
func (l Whitened) matrix(in []int, progress prior.Progress) ([]float32, prior.CacheUse, error) {
	tr, d, err := l.base(in)
	if err != nil {
		return nil, prior.CacheUse{}, err
	}
	return l.matrixWith(context.Background(), in, tr, d, progress)
}

// matrixWith is matrix given Base's transform tr for in and its output length d, stopping
// once ctx is done.
func (l Whitened) matrixWith(ctx context.Context, in []int, tr func([]float32) ([]float32, error), d int, progress prior.Progress) ([]float32, prior.CacheUse, error) {
	var use prior.CacheUse
	key, err := l.key(in)
	if err != nil {
		return nil, use, err
	}
	dir, err := prior.CacheDir()
	if err != nil {
		dir = "" // computed, not kept
	}
	M, use, err := prior.MapContext(ctx, dir, key, d, progress, func() ([]float32, error) {
		rows := func(lo, hi int, dst []float32) error {
			x, err := l.priorImages(in, lo, hi)
			if err != nil {
				return err
			}
			f, err := tr(x)
			if err != nil {
				return fmt.Errorf("whitened: base features of the prior's images: %w", err)
			}
			if len(f) != len(dst) {
				return fmt.Errorf("whitened: base gives %d values for %d images", len(f), hi-lo)
			}
			copy(dst, f)
			return nil
		}
		return prior.WhiteningContext(ctx, l.Prior.Len(), d, rows, l.Floor, progress)
	})
	if err != nil {
		return nil, use, fmt.Errorf("whitened: %w", err)
	}
	return M, use, nil
}

// priorImages renders the prior's images [lo, hi) of shape in, on every core.
func (l Whitened) priorImages(in []int, lo, hi int) ([]float32, error) {
	size := num.Prod(in)
	x := make([]float32, (hi-lo)*size)
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	parallel.For(workers, hi-lo, 1, func(w, a, _ int) {
		if errs[w] == nil {
			errs[w] = l.Prior.Image(lo+a, in[0], in[1], in[2], x[a*size:(a+1)*size])
		}
	})
	return x, errors.Join(errs...)
}

// NewTransform makes Whitened a FrontEnd: Base's transform, then the product with the
// map. The map is computed or loaded (see the type) at the transform's first call, not
// here, so that a model is built, and a command can print its plan, before the minutes
// of a first computation; commands call PrepareContext before, to show them.
func (l Whitened) NewTransform(in []int) (func(x []float32) ([]float32, error), error) {
	tr, d, err := l.base(in)
	if err != nil {
		return nil, err
	}
	var (
		once sync.Once
		M    []float32
		mErr error
	)
	return func(x []float32) ([]float32, error) {
		once.Do(func() { M, _, mErr = l.matrixWith(context.Background(), in, tr, d, nil) })
		if mErr != nil {
			return nil, mErr
		}
		f, err := tr(x)
		if err != nil {
			return nil, err
		}
		return prior.Apply(f, d, M)
	}, nil
}

// Apply adds Base's graphs and the product with the map to the graph of x [B, C, H, W]:
// the reference for NewTransform, slow (see Scattering2D.Apply).
func (l Whitened) Apply(x *G.Node, _ []*G.Node) (*G.Node, *Tap, error) {
	xs := x.Shape()
	if len(xs) != 4 {
		return nil, nil, fmt.Errorf("whitened: input node shape %v, want [B C H W]", xs)
	}
	in := []int{xs[1], xs[2], xs[3]}
	out, err := l.OutputShape(in)
	if err != nil {
		return nil, nil, err
	}
	M, _, err := l.matrix(in, nil)
	if err != nil {
		return nil, nil, err
	}
	y := x
	for j, sub := range l.Base {
		if y, _, err = sub.Apply(y, nil); err != nil {
			return nil, nil, fmt.Errorf("whitened: base layer %d: %w", j, err)
		}
	}
	d := out[0]
	var t tensor.Tensor
	if x.Dtype() == tensor.Float32 {
		t = tensor.New(tensor.WithShape(d, d), tensor.WithBacking(slices.Clone(M)))
	} else {
		v := make([]float64, len(M))
		for i, m := range M {
			v[i] = float64(m)
		}
		t = tensor.New(tensor.WithShape(d, d), tensor.WithBacking(v))
	}
	m := G.NewMatrix(x.Graph(), x.Dtype(), G.WithShape(d, d), G.WithValue(t),
		G.WithName(fmt.Sprintf("whitened_map_%d", x.Graph().AllNodes().Len())))
	out2, err := G.Mul(y, m)
	if err != nil {
		return nil, nil, fmt.Errorf("whitened: %w", err)
	}
	return out2, nil, nil
}

// whitenedSettings are a Whitened layer's stored settings:
// {"base":[{"type":"scattering2d",…},…],"prior":"dead-leaves v1","scenes":35000,"seed":1,"floor":0.001}.
type whitenedSettings struct {
	Base   []storedLayer `json:"base"`
	Prior  string        `json:"prior"`
	Scenes int           `json:"scenes"`
	Seed   uint64        `json:"seed"`
	Floor  float64       `json:"floor"`
}

func init() {
	register(Codec{
		Kind: Whitened{}.Kind(),
		Type: reflect.TypeFor[Whitened](),
		Encode: func(l Layer) (json.RawMessage, error) {
			w := l.(Whitened)
			base, err := encodeLayers(w.Base)
			if err != nil {
				return nil, fmt.Errorf("whitened base: %w", err)
			}
			return json.Marshal(whitenedSettings{Base: base, Prior: w.Prior.Version(), Scenes: w.Prior.Scenes, Seed: w.Prior.Seed, Floor: w.Floor})
		},
		Decode: func(raw json.RawMessage) (Layer, error) {
			var s whitenedSettings
			if err := strictjson.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			if want := (prior.DeadLeaves{}).Version(); s.Prior != want {
				return nil, fmt.Errorf("whitened: prior %q: this build knows only %q", s.Prior, want)
			}
			if len(s.Base) == 0 {
				return nil, errors.New("whitened: no base layers")
			}
			base, err := decodeLayers("whitened", "base", s.Base)
			if err != nil {
				return nil, err
			}
			for j, b := range base {
				if _, nested := b.(Whitened); nested {
					return nil, fmt.Errorf("whitened: base layer %d is itself whitened", j)
				}
			}
			w := Whitened{Base: base, Prior: prior.DeadLeaves{Scenes: s.Scenes, Seed: s.Seed}, Floor: s.Floor}
			if err := w.Prior.Validate(); err != nil {
				return nil, fmt.Errorf("whitened: %w", err)
			}
			if !(w.Floor >= prior.MinFloor && w.Floor <= 1) {
				return nil, fmt.Errorf("whitened: floor %v: want a number in [%g, 1]", w.Floor, prior.MinFloor)
			}
			return w, nil
		},
	}, true)
}

var (
	_ TorchParamsExporter = Whitened{}
	_ TorchDefiner        = Whitened{}
)

// TorchModule is Whitened([base modules], d), the class TorchDefinition defines.
func (l Whitened) TorchModule(in []int) (string, error) {
	out, err := l.OutputShape(in)
	if err != nil {
		return "", err
	}
	var mods []string
	shape := in
	for j, sub := range l.Base {
		ex, ok := sub.(TorchExporter)
		if !ok {
			return "", fmt.Errorf("whitened base layer %d (%T) has no PyTorch equivalent", j, sub)
		}
		m, err := ex.TorchModule(shape)
		if err != nil {
			return "", fmt.Errorf("whitened base layer %d: %w", j, err)
		}
		mods = append(mods, m)
		if shape, err = sub.OutputShape(shape); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("Whitened([%s], %d)", strings.Join(mods, ", "), out[0]), nil
}

// TorchParams are the base layers' buffers (each as its module exports them) named
// "base.j.name", and the map [d, d] named "map", in the model's dtype. The map is
// computed or loaded as for NewTransform.
func (l Whitened) TorchParams(in []int, _ [][]float64) ([]TorchTensor, error) {
	out, err := l.OutputShape(in)
	if err != nil {
		return nil, err
	}
	var ts []TorchTensor
	shape := in
	for j, sub := range l.Base {
		if pe, ok := sub.(TorchParamsExporter); ok {
			sts, err := pe.TorchParams(shape, nil)
			if err != nil {
				return nil, fmt.Errorf("whitened base layer %d: %w", j, err)
			}
			for _, t := range sts {
				t.Name = fmt.Sprintf("base.%d.%s", j, t.Name)
				ts = append(ts, t)
			}
		}
		if shape, err = sub.OutputShape(shape); err != nil {
			return nil, err
		}
	}
	M, _, err := l.matrix(in, nil)
	if err != nil {
		return nil, err
	}
	v := make([]float64, len(M))
	for i, m := range M {
		v[i] = float64(m)
	}
	return append(ts, TorchTensor{Name: "map", Shape: []int{out[0], out[0]}, Values: v}), nil
}

// TorchDefinition is the Whitened module: base(x) @ map.
func (Whitened) TorchDefinition() string {
	return `class Whitened(nn.Module):
    """privtrain's layers.Whitened: base(x) @ map, the map a fixed buffer computed from
    images of a random process (dead leaves), never from data."""

    def __init__(self, base, dim):
        super().__init__()
        self.base = nn.Sequential(*base)
        self.register_buffer("map", torch.zeros((dim, dim)))

    def forward(self, x):
        y = self.base(x)
        return y @ self.map.to(y.dtype)
`
}
