package prior

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// DeadLeaves is a random process of images that sees no data: dead-leaves scenes (Lee,
// Mumford & Huang 2001; one of the synthetic sources of DP-RandP, Tang et al. 2023), each
// rendered twice under its own random view. A scene is 48 discs, rectangles and ellipses
// (kind uniform) of uniform grey levels (one per channel) on a uniform background, each
// occluding the ones drawn before it; radii follow the power law of density ∝ r⁻³ on
// [1, 16] pixels (the model's scale invariance), centres are uniform on [−4, W+4) ×
// [−4, H+4) (pixel centres lie at 0 … W−1), angles uniform on [0, π), aspect ratios
// uniform on [0.3, 1]. A view renders the scene scaled about the image centre by a factor uniform on
// [0.8, 1.25], shifted by up to ±3 pixels on each axis, mirrored left to right with
// probability ½, under a gain uniform on [0.6, 1.4] and an offset uniform on ±0.2 around
// grey 0.5; values are clipped to [0, 1] and rounded to multiples of 1/255, as an 8-bit
// image file would hold them.
//
// Image i is view i / Scenes of scene i mod Scenes (the first views of every scene, then
// the second ones). Every scene and view is drawn from its own PCG stream of Seed, so an
// image does not depend on which others were rendered or in what order. This is the
// generator of scripts/scatter_probe.py's --write-dead-leaves (same distribution, not the
// same draws: that one uses NumPy's generator).
type DeadLeaves struct {
	// Scenes is the number of scenes; the process has 2·Scenes images.
	Scenes int
	// Seed chooses the draws.
	Seed uint64
}

// The process's fixed parameters; changing any of them is a new generator (Version).
const (
	deadLeavesShapes = 48
	deadLeavesViews  = 2
	deadLeavesRMin   = 1.0
	deadLeavesRMax   = 16.0
	deadLeavesMargin = 4.0 // centres within this many pixels around the frame
	deadLeavesShift  = 3.0 // a view's largest shift, pixels
	// MaxScenes bounds Scenes, and with layers.MaxWhitenedInput and prior.MaxDim the
	// time a checkpoint naming a prior can make a command spend computing it (about 20
	// minutes on two cores for 500,000 images of 28×28).
	MaxScenes = 250_000
)

// Version names the generator and its fixed parameters (part of every cache key).
func (DeadLeaves) Version() string { return "dead-leaves v1" }

// Validate says why d cannot be drawn, or nil.
func (d DeadLeaves) Validate() error {
	if d.Scenes <= 0 || d.Scenes > MaxScenes {
		return fmt.Errorf("prior: dead leaves: %d scenes, want 1 to %d", d.Scenes, MaxScenes)
	}
	return nil
}

// Len is the number of images: 2·Scenes.
func (d DeadLeaves) Len() int { return deadLeavesViews * d.Scenes }

// leaf is one shape of a scene.
type leaf struct {
	kind       int // 0 disc, 1 rectangle, 2 ellipse
	r, cx, cy  float64
	angle, asp float64
	value      []float64 // one grey level per channel
}

// view is the transformation under which a scene is rendered.
type view struct {
	scale, tx, ty float64
	mirror        bool
	gain, offset  float64
}

// deadLeavesRadius is the power law's inverse CDF: r = 1/√(1/a² − u·(1/a² − 1/b²)) for u
// uniform on [0, 1) has density ∝ r⁻³ on [a, b].
func deadLeavesRadius(u float64) float64 {
	lo, hi := 1/(deadLeavesRMin*deadLeavesRMin), 1/(deadLeavesRMax*deadLeavesRMax)
	return 1 / math.Sqrt(lo-u*(lo-hi))
}

// scene draws scene k's background and shapes for c channels of h×w images.
func (d DeadLeaves) scene(k, c, h, w int) (bg []float64, leaves []leaf) {
	rng := rand.New(rand.NewPCG(d.Seed, uint64(k)))
	bg = make([]float64, c)
	for ch := range bg {
		bg[ch] = rng.Float64()
	}
	leaves = make([]leaf, deadLeavesShapes)
	for i := range leaves {
		l := &leaves[i]
		l.kind = rng.IntN(3)
		l.r = deadLeavesRadius(rng.Float64())
		l.cx = -deadLeavesMargin + rng.Float64()*(float64(w)+2*deadLeavesMargin)
		l.cy = -deadLeavesMargin + rng.Float64()*(float64(h)+2*deadLeavesMargin)
		l.angle = rng.Float64() * math.Pi
		l.asp = 0.3 + 0.7*rng.Float64()
		l.value = make([]float64, c)
		for ch := range l.value {
			l.value[ch] = rng.Float64()
		}
	}
	return bg, leaves
}

// view draws view v of scene k, from a stream apart from the scene's.
func (d DeadLeaves) view(k, v int) view {
	rng := rand.New(rand.NewPCG(^d.Seed, uint64(k)*deadLeavesViews+uint64(v)))
	return view{
		scale:  0.8 + 0.45*rng.Float64(),
		tx:     -deadLeavesShift + 2*deadLeavesShift*rng.Float64(),
		ty:     -deadLeavesShift + 2*deadLeavesShift*rng.Float64(),
		mirror: rng.Float64() < 0.5,
		gain:   0.6 + 0.8*rng.Float64(),
		offset: -0.2 + 0.4*rng.Float64(),
	}
}

// placed is l as view t renders it: scaled about the image centre (ox, oy), shifted,
// mirrored.
func (l *leaf) placed(t view, ox, oy float64) leaf {
	p := *l
	p.cx = (l.cx-ox)*t.scale + ox + t.tx
	p.cy = (l.cy-oy)*t.scale + oy + t.ty
	p.r = l.r * t.scale
	if t.mirror {
		p.cx = 2*ox - p.cx
		p.angle = math.Pi - l.angle
	}
	return p
}

// covers says whether the point (x, y) lies inside l (open shapes: a boundary point is out).
func (l *leaf) covers(x, y float64) bool {
	dx, dy := x-l.cx, y-l.cy
	if l.kind == 0 {
		return dx*dx+dy*dy < l.r*l.r
	}
	sin, cos := math.Sincos(l.angle)
	u, v := dx*cos+dy*sin, -dx*sin+dy*cos
	if l.kind == 1 {
		return math.Abs(u) < l.r && math.Abs(v) < l.r*l.asp
	}
	a, b := u/l.r, v/(l.r*l.asp)
	return a*a+b*b < 1
}

// Image writes image i of the process as c×h×w values (CHW) into dst, which must hold
// c·h·w values: pixel (x, y) is the point at column x, row y.
func (d DeadLeaves) Image(i, c, h, w int, dst []float32) error {
	if err := d.Validate(); err != nil {
		return err
	}
	if i < 0 || i >= d.Len() {
		return fmt.Errorf("prior: dead leaves: image %d of %d", i, d.Len())
	}
	if c <= 0 || h <= 0 || w <= 0 {
		return fmt.Errorf("prior: dead leaves: image shape %d×%d×%d", c, h, w)
	}
	if len(dst) != c*h*w {
		return errors.New("prior: dead leaves: destination of the wrong length")
	}
	k, v := i%d.Scenes, i/d.Scenes
	bg, leaves := d.scene(k, c, h, w)
	t := d.view(k, v)
	ox, oy := float64(w)/2-0.5, float64(h)/2-0.5
	placed := make([]leaf, len(leaves))
	for j := range leaves {
		placed[j] = leaves[j].placed(t, ox, oy)
	}
	for y := range h {
		for x := range w {
			val := bg
			for j := len(placed) - 1; j >= 0; j-- { // the last shape drawn is on top
				if placed[j].covers(float64(x), float64(y)) {
					val = placed[j].value
					break
				}
			}
			for ch := range c {
				g := (val[ch]-0.5)*t.gain + 0.5 + t.offset
				q := math.Round(min(max(g, 0), 1) * 255)
				dst[(ch*h+y)*w+x] = float32(q) / 255 // as package datasets scales a byte
			}
		}
	}
	return nil
}
