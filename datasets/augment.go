package datasets

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/internal/privrand"
)

// ErrAugment reports an augmentation that does not fit the data: a crop or flip of
// examples that are not images [C, H, W], a negative padding, or padding wider than the
// image.
var ErrAugment = errors.New("datasets: invalid augmentation")

// Augment describes the random views of an image that augmentation multiplicity trains on
// (De et al. 2022, after jax_privacy's augmult): a random crop of the image padded by Pad
// pixels on every side, back to its own size, then a horizontal flip with probability 1/2.
// It changes neither the label nor the value range.
//
// A view is a deterministic function of a key, the training step, the example's index and
// the view's number (View): no generator state, so a resumed seeded run draws the same
// views as an uninterrupted one. The randomness is not privacy-critical (it is part of the
// per-example computation whose output is clipped), but runs are reproducible with a seed.
type Augment struct {
	// Crop takes a random H×W window of the image padded by Pad on each side: offsets
	// uniform in [0, 2·Pad] per axis, so Pad = 4 shifts a 32×32 image by up to 4 pixels.
	Crop bool
	Pad  int
	// ZeroPad pads with zeros; the default mirrors the edge rows and columns (symmetric
	// padding, the edge pixel repeated: jax_privacy's padding_input).
	ZeroPad bool
	// Flip mirrors the (cropped) image left to right with probability 1/2: right for
	// natural images (CIFAR), wrong for digits and clothing whose orientation carries
	// meaning, so it is off by default for those (DefaultAugment).
	Flip bool
}

// DefaultPad is the crop padding of De et al. for 32×32 images (4 pixels), used for every
// image size by DefaultAugment.
const DefaultPad = 4

// MaxPad is the largest crop padding ParseAugment accepts (mirrored padding must also fit
// the image: Check).
const MaxPad = 64

// DefaultAugment is the augmentation for a dataset name: random crop with 4 pixels of
// mirrored padding for every image dataset, plus horizontal flips for CIFAR
// ("cifar10", "cifar100", or a name starting with "cifar"); no flip for digits
// (MNIST) or Fashion-MNIST.
func DefaultAugment(dataset string) Augment {
	a := Augment{Crop: true, Pad: DefaultPad}
	if strings.HasPrefix(strings.ToLower(dataset), "cifar") {
		a.Flip = true
	}
	return a
}

// ParseAugment reads "crop,flip", "crop", "flip" or "none" (the list of transformations,
// in any order), with the crop's padding DefaultPad; "crop:N" pads by N pixels instead
// (N from 1 to MaxPad: a 28×28 image is better shifted by 1 or 2 pixels than by 4).
func ParseAugment(s string) (Augment, error) {
	var a Augment
	s = strings.TrimSpace(s)
	if s == "none" {
		return a, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, pad, hasPad := strings.Cut(part, ":")
		if hasPad && name != "crop" {
			return Augment{}, fmt.Errorf("%w: %q: only crop takes a padding (crop:N)", ErrAugment, s)
		}
		switch name {
		case "crop":
			if a.Crop {
				return Augment{}, fmt.Errorf("%w: %q names crop twice", ErrAugment, s)
			}
			a.Crop, a.Pad = true, DefaultPad
			if hasPad {
				n, err := strconv.Atoi(pad)
				if err != nil || n < 1 || n > MaxPad {
					return Augment{}, fmt.Errorf("%w: %q: crop:N wants a padding N of 1 to %d pixels", ErrAugment, part, MaxPad)
				}
				a.Pad = n
			}
		case "flip":
			if a.Flip {
				return Augment{}, fmt.Errorf("%w: %q names flip twice", ErrAugment, s)
			}
			a.Flip = true
		default:
			return Augment{}, fmt.Errorf("%w: %q: want a comma-separated list of crop (or crop:N) and flip, or none", ErrAugment, s)
		}
	}
	return a, nil
}

// Identity reports whether every view is the image itself (no crop with padding, no flip).
func (a Augment) Identity() bool { return !(a.Crop && a.Pad > 0) && !a.Flip }

// String is "crop(pad=4,mirror),flip", "crop(pad=4,zero)", "flip" or "none": the form
// checkpoints record.
func (a Augment) String() string {
	var parts []string
	if a.Crop {
		mode := "mirror"
		if a.ZeroPad {
			mode = "zero"
		}
		parts = append(parts, fmt.Sprintf("crop(pad=%d,%s)", a.Pad, mode))
	}
	if a.Flip {
		parts = append(parts, "flip")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// Check reports (ErrAugment) whether a fits examples of the given shape: crops and flips
// need images [C, H, W], and mirrored padding at most the image's height and width.
func (a Augment) Check(shape []int) error {
	if a.Pad < 0 {
		return fmt.Errorf("%w: padding %d", ErrAugment, a.Pad)
	}
	if a.Identity() {
		return nil
	}
	if len(shape) != 3 || shape[0] < 1 || shape[1] < 1 || shape[2] < 1 {
		return fmt.Errorf("%w: %v of examples of shape %v, want images [C H W]", ErrAugment, a, shape)
	}
	if a.Crop && !a.ZeroPad && (a.Pad > shape[1] || a.Pad > shape[2]) {
		return fmt.Errorf("%w: mirrored padding of %d pixels on a %d×%d image", ErrAugment, a.Pad, shape[1], shape[2])
	}
	return nil
}

// Draw is one view's random choices: the crop's offsets in the padded image (0…2·Pad) and
// whether it is flipped.
type Draw struct {
	DY, DX int
	Flip   bool
}

// AugmentKey derives the views' key from a run's seed: privrand's Augmentation stream,
// which shares nothing with the seed's noise and sampling streams.
func AugmentKey(seed uint64) uint64 { return privrand.Key64(seed, privrand.Augmentation) }

// NewAugmentKey is a key from the operating system's secure generator, for a run without
// a seed. It does not fail; the error is kept for callers written when it could.
func NewAugmentKey() (uint64, error) { return privrand.NewKey64(), nil }

// splitmix is SplitMix64's finaliser: a bijection of uint64 that spreads every input bit.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Draw returns the choices of view v of example i at training step step under key: a PCG
// generator seeded with the key and a hash of (step, i, v).
func (a Augment) Draw(key uint64, step, i, v int) Draw {
	var pcg rand.PCG
	pcg.Seed(key, splitmix(splitmix(splitmix(uint64(step))^uint64(i))^uint64(v)))
	var d Draw
	if a.Crop && a.Pad > 0 {
		d.DY = uniform(pcg.Uint64(), 2*a.Pad+1)
		d.DX = uniform(pcg.Uint64(), 2*a.Pad+1)
	}
	if a.Flip {
		d.Flip = pcg.Uint64()>>63 == 1
	}
	return d
}

// uniform maps a uniform 64-bit value to [0, n) (multiply-high: bias below n/2⁶⁴).
func uniform(u uint64, n int) int {
	hi, _ := bits.Mul64(u, uint64(n))
	return int(hi)
}

// Apply writes the view d of src, an image of shape [C, H, W] flattened in CHW order, into
// dst (same length; not src): dst[c][y][x] = padded[c][y+DY][x'+DX] with x' = W−1−x when
// flipped, where padded is src with Pad pixels on each side (mirrored or zero). Check the
// shape first (Apply panics on a wrong length).
func (a Augment) Apply(dst, src []float32, shape []int, d Draw) {
	C, H, W := shape[0], shape[1], shape[2]
	if len(src) != C*H*W || len(dst) != len(src) {
		panic(fmt.Sprintf("datasets: augmenting %d values into %d for shape %v", len(src), len(dst), shape))
	}
	p := 0
	if a.Crop {
		p = a.Pad
	}
	for c := range C {
		img, out := src[c*H*W:(c+1)*H*W], dst[c*H*W:(c+1)*H*W]
		for y := range H {
			sy, ok := a.index(y+d.DY-p, H)
			row := out[y*W : (y+1)*W]
			if !ok {
				clear(row)
				continue
			}
			for x := range W {
				xx := x
				if d.Flip {
					xx = W - 1 - x
				}
				sx, ok := a.index(xx+d.DX-p, W)
				if !ok {
					row[x] = 0
					continue
				}
				row[x] = img[sy*W+sx]
			}
		}
	}
}

// index maps a coordinate of the padded image to the source: mirrored (…, 1, 0 | 0, 1, …,
// n−1 | n−1, n−2, …) or, with ZeroPad, outside (false).
func (a Augment) index(i, n int) (int, bool) {
	switch {
	case i >= 0 && i < n:
		return i, true
	case a.ZeroPad:
		return 0, false
	case i < 0:
		return -i - 1, true
	default:
		return 2*n - 1 - i, true
	}
}

// View writes view v of example i of ds at training step step into dst and returns the
// example's label: ds.Example into scratch (len(dst) values), then Apply with
// Draw(key, step, i, v).
func (a Augment) View(ds Dataset, i, step, v int, key uint64, dst, scratch []float32, shape []int) int {
	label := ds.Example(i, scratch)
	a.Apply(dst, scratch, shape, a.Draw(key, step, i, v))
	return label
}
