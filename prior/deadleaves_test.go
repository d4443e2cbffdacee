package prior

import (
	"math"
	"slices"
	"sort"
	"testing"
)

// TestDeadLeavesDeterministic: an image depends on the seed and its index alone, not on
// which images were drawn before it; another seed gives other images; the two views of a
// scene differ.
func TestDeadLeavesDeterministic(t *testing.T) {
	d := DeadLeaves{Scenes: 5, Seed: 7}
	img := func(d DeadLeaves, i int) []float32 {
		x := make([]float32, 2*12*10)
		if err := d.Image(i, 2, 12, 10, x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	forward := make([][]float32, d.Len())
	for i := range d.Len() {
		forward[i] = img(d, i)
	}
	for i := d.Len() - 1; i >= 0; i-- {
		if !slices.Equal(img(d, i), forward[i]) {
			t.Errorf("image %d differs when drawn in another order", i)
		}
	}
	if slices.Equal(img(DeadLeaves{Scenes: 5, Seed: 8}, 0), forward[0]) {
		t.Error("seeds 7 and 8 give the same image 0")
	}
	if slices.Equal(forward[0], forward[5]) {
		t.Error("the two views of scene 0 are the same image")
	}
}

// TestDeadLeavesValues: every value is a multiple of 1/255 in [0, 1], computed as package
// datasets scales a byte (float32(b)/255), and an image is not flat.
func TestDeadLeavesValues(t *testing.T) {
	d := DeadLeaves{Scenes: 50, Seed: 1}
	x := make([]float32, 28*28)
	for i := range d.Len() {
		if err := d.Image(i, 1, 28, 28, x); err != nil {
			t.Fatal(err)
		}
		for _, v := range x {
			b := math.Round(float64(v) * 255)
			if b < 0 || b > 255 || v != float32(b)/255 {
				t.Fatalf("image %d: value %v is not a byte/255", i, v)
			}
		}
		if slices.Min(x) == slices.Max(x) {
			t.Errorf("image %d is flat", i)
		}
	}
}

// TestDeadLeavesRadii: the radii follow the power law of density ∝ r⁻³ on [1, 16]: the
// Kolmogorov–Smirnov distance of 48,000 drawn radii to the closed-form CDF
// F(r) = (1 − r⁻²)/(1 − 16⁻²) is below the 0.1 % critical value 1.95/√n.
func TestDeadLeavesRadii(t *testing.T) {
	d := DeadLeaves{Scenes: 1000, Seed: 2}
	var r []float64
	for k := range d.Scenes {
		_, leaves := d.scene(k, 1, 28, 28)
		for _, l := range leaves {
			r = append(r, l.r)
		}
	}
	sort.Float64s(r)
	cdf := func(x float64) float64 { return (1 - 1/(x*x)) / (1 - 1.0/256) }
	ks := 0.0
	for i, x := range r {
		f := cdf(x)
		ks = max(ks, math.Abs(f-float64(i)/float64(len(r))), math.Abs(f-float64(i+1)/float64(len(r))))
	}
	if crit := 1.95 / math.Sqrt(float64(len(r))); ks > crit || r[0] < 1 || r[len(r)-1] > 16 {
		t.Errorf("KS distance %.4f (critical %.4f), radii in [%.3f, %.3f]; want the r⁻³ law on [1, 16]", ks, crit, r[0], r[len(r)-1])
	}
}

// TestDeadLeavesShapes: a disc, a rectangle and an ellipse of radius 12 cover, on a grid
// of 0.01-pixel spacing, the closed-form areas πr², 4r²·a and πr²·a to within 0.5 %; a
// rotated rectangle covers its rotated corners' inside and not their outside.
func TestDeadLeavesShapes(t *testing.T) {
	const r, a = 12.0, 0.5
	for _, c := range []struct {
		kind int
		area float64
	}{{0, math.Pi * r * r}, {1, 4 * r * r * a}, {2, math.Pi * r * r * a}} {
		l := leaf{kind: c.kind, r: r, asp: a, angle: 0.7}
		n := 0
		const h = 0.01
		for x := -1.5 * r; x < 1.5*r; x += h { // a turned rectangle reaches r·√(1+a²)
			for y := -1.5 * r; y < 1.5*r; y += h {
				if l.covers(x, y) {
					n++
				}
			}
		}
		if got := float64(n) * h * h; math.Abs(got-c.area) > 0.005*c.area {
			t.Errorf("kind %d: area %.2f, want %.2f", c.kind, got, c.area)
		}
	}
	l := leaf{kind: 1, r: 4, asp: 0.5, angle: math.Pi / 2} // half-sides 4 along u, 2 along v; turned by 90°
	if !l.covers(1.9, 3.9) || l.covers(2.1, 0) || l.covers(0, 4.1) || !l.covers(-1.9, -3.9) {
		t.Error("a rectangle turned by 90° is not where it should be")
	}
}

// TestDeadLeavesMirror: a view that mirrors renders the scene's mirror image: with the
// same scale, shift and contrast but mirror set, the image is the other one flipped
// left to right (the mirror is applied after the shift).
func TestDeadLeavesMirror(t *testing.T) {
	d := DeadLeaves{Scenes: 3, Seed: 4}
	const h, w = 16, 20
	for k := range d.Scenes {
		bg, leaves := d.scene(k, 1, h, w)
		v := d.view(k, 0)
		render := func(v view) []float64 {
			out := make([]float64, h*w)
			ox, oy := float64(w)/2-0.5, float64(h)/2-0.5
			for y := range h {
				for x := range w {
					out[y*w+x] = bg[0]
					for j := range leaves {
						p := leaves[j].placed(v, ox, oy)
						if p.covers(float64(x), float64(y)) {
							out[y*w+x] = p.value[0]
						}
					}
				}
			}
			return out
		}
		v.mirror = false
		plain := render(v)
		v.mirror = true
		mirrored := render(v)
		for y := range h {
			for x := range w {
				if plain[y*w+x] != mirrored[y*w+w-1-x] {
					t.Fatalf("scene %d: pixel (%d, %d) %v, mirrored (%d, %d) %v", k, x, y, plain[y*w+x], w-1-x, y, mirrored[y*w+w-1-x])
				}
			}
		}
	}
}

// TestDeadLeavesRefuses: bad arguments are errors that say what is wrong.
func TestDeadLeavesRefuses(t *testing.T) {
	x := make([]float32, 4)
	for _, c := range []struct {
		d          DeadLeaves
		i, c, h, w int
		dst        []float32
	}{
		{DeadLeaves{Scenes: 0}, 0, 1, 2, 2, x},
		{DeadLeaves{Scenes: MaxScenes + 1}, 0, 1, 2, 2, x},
		{DeadLeaves{Scenes: 2}, 4, 1, 2, 2, x},
		{DeadLeaves{Scenes: 2}, -1, 1, 2, 2, x},
		{DeadLeaves{Scenes: 2}, 0, 0, 2, 2, x},
		{DeadLeaves{Scenes: 2}, 0, 1, 2, 3, x},
	} {
		if err := c.d.Image(c.i, c.c, c.h, c.w, c.dst); err == nil {
			t.Errorf("%+v image %d of %d×%d×%d: no error", c.d, c.i, c.c, c.h, c.w)
		}
	}
}
