package scatter

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/datasets"
)

func TestChannelsAndShapes(t *testing.T) {
	// 1 path of order 0, J·L of order 1, and for order 2 the L² angle pairs of each of the
	// J(J−1)/2 scale pairs j1 < j2: J = 2, L = 8 gives 1 + 16 + 64.
	if got := Channels(2, 8); got != 81 {
		t.Errorf("Channels(2, 8) = %d, want 81", got)
	}
	if got := Channels(3, 4); got != 1+12+16*3 {
		t.Errorf("Channels(3, 4) = %d, want 61", got)
	}
	for _, c := range []struct {
		C, H, W int
		want    []int
	}{
		{1, 28, 28, []int{81, 7, 7}},  // Fashion-MNIST
		{3, 32, 32, []int{243, 8, 8}}, // CIFAR-10
		{2, 30, 17, []int{162, 7, 4}}, // ⌊30/4⌋, ⌊17/4⌋
	} {
		s, err := New(2, 8, c.H, c.W)
		if err != nil {
			t.Fatal(err)
		}
		got := s.OutputShape(c.C)
		if len(got) != 3 || got[0] != c.want[0] || got[1] != c.want[1] || got[2] != c.want[2] {
			t.Errorf("%d×%d×%d: OutputShape %v, want %v", c.C, c.H, c.W, got, c.want)
		}
		if free, err := OutputShape(2, 8, c.C, c.H, c.W); err != nil || len(free) != 3 || free[0] != c.want[0] || free[1] != c.want[1] || free[2] != c.want[2] {
			t.Errorf("OutputShape(2, 8, %d, %d, %d) = %v, %v; want %v", c.C, c.H, c.W, free, err, c.want)
		}
		feats, err := s.Transform(make([]float32, 2*c.C*c.H*c.W), c.C)
		if err != nil {
			t.Fatal(err)
		}
		if len(feats) != 2*c.want[0]*c.want[1]*c.want[2] {
			t.Errorf("%d×%d×%d: %d features for 2 images, want 2·%v", c.C, c.H, c.W, len(feats), c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		J, L, H, W int
		want       string
	}{
		{0, 8, 28, 28, "J = 0"},
		{2, 0, 28, 28, "L = 0"},
		{2, 8, 3, 28, "smaller than 2^J = 4"},
		{3, 8, 28, 7, "smaller than 2^J = 8"},
		{40, 8, 28, 28, "J = 40"},
	} {
		if _, err := New(c.J, c.L, c.H, c.W); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%d, %d, %d, %d) = %v, want an error containing %q", c.J, c.L, c.H, c.W, err, c.want)
		}
	}
	s, err := New(2, 8, 8, 8)
	if err != nil {
		t.Fatal(err)
	}
	bad := make([]float32, 2*64)
	bad[70] = float32(math.NaN())
	for _, c := range []struct {
		x    []float32
		C    int
		want string
	}{
		{make([]float32, 65), 1, "not a whole number of 1×8×8 images"},
		{make([]float32, 64), 2, "not a whole number of 2×8×8 images"},
		{make([]float32, 64), 0, "0 channels"},
		{bad, 1, "value 70 of the batch (image 1) is NaN"},
	} {
		if _, err := s.Transform(c.x, c.C); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Transform(%d values, C=%d) = %v, want an error containing %q", len(c.x), c.C, err, c.want)
		}
	}
	if _, err := OutputShape(2, 8, 1, 3, 8); err == nil || !strings.Contains(err.Error(), "smaller than 2^J = 4") {
		t.Errorf("OutputShape of a 3×8 image with J = 2: %v", err)
	}
	if _, err := OutputShape(2, 8, 0, 8, 8); err == nil || !strings.Contains(err.Error(), "0 channels") {
		t.Errorf("OutputShape with 0 channels: %v", err)
	}
	if _, err := s.Transform64([]float64{math.Inf(1)}, 1); err == nil || !strings.Contains(err.Error(), "not a whole number") {
		t.Errorf("Transform64 of one value: %v", err)
	}
	if _, err := NewBank(30, 36, 2, 8); err == nil || !strings.Contains(err.Error(), "multiple of 2^J") {
		t.Errorf("NewBank(30, 36, 2, 8) = %v, want a grid-size error", err)
	}
}

// TestBatchLayout holds the parallel float32 batch path to the float64 single-channel
// path: image i, channel c, path k at features [i][c·K + k], the same for any number of
// workers (bit for bit).
func TestBatchLayout(t *testing.T) {
	const B, C, H, W = 5, 3, 12, 10
	s, err := New(2, 4, H, W)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, B*C*H*W)
	for i := range x {
		x[i] = rng.Float32()
	}
	got, err := s.Transform(x, C)
	if err != nil {
		t.Fatal(err)
	}
	K := s.Channels()
	area := len(got) / (B * C * K)
	for i := 0; i < B; i++ {
		for c := 0; c < C; c++ {
			img := make([]float64, H*W)
			for k := range img {
				img[k] = float64(x[(i*C+c)*H*W+k])
			}
			for k, path := range transform64(t, s, img) {
				for p, v := range path {
					g := got[((i*C+c)*K+k)*area+p]
					if math.Abs(float64(g)-v) > 1e-6*math.Max(1, math.Abs(v)) {
						t.Fatalf("image %d channel %d path %d pixel %d: %g, float64 path %g", i, c, k, p, g, v)
					}
				}
			}
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	serial, err := s.Transform(x, C)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(serial[i]) {
			t.Fatalf("feature %d: %g with GOMAXPROCS workers, %g with one", i, got[i], serial[i])
		}
	}
}

// blobs is a band-limited image: three Gaussian bumps of random sign well inside a zero
// background, so that reflection padding adds nothing and a few pixels of translation
// keep it inside.
func blobs(rng *rand.Rand, H, W int) []float64 {
	img := make([]float64, H*W)
	for b := 0; b < 3; b++ {
		ci, cj := float64(H)/3+float64(H)/3*rng.Float64(), float64(W)/3+float64(W)/3*rng.Float64()
		s := 1 + 1.5*rng.Float64()
		a := rng.NormFloat64()
		for i := 0; i < H; i++ {
			for j := 0; j < W; j++ {
				d := (float64(i)-ci)*(float64(i)-ci) + (float64(j)-cj)*(float64(j)-cj)
				img[i*W+j] += a * math.Exp(-d/(2*s*s))
			}
		}
	}
	return img
}

func shift(img []float64, H, W, di, dj int) []float64 {
	out := make([]float64, H*W)
	for i := 0; i < H; i++ {
		for j := 0; j < W; j++ {
			if si, sj := i-di, j-dj; si >= 0 && si < H && sj >= 0 && sj < W {
				out[i*W+j] = img[si*W+sj]
			}
		}
	}
	return out
}

func energy(S [][]float64) float64 {
	var e float64
	for _, p := range S {
		for _, v := range p {
			e += v * v
		}
	}
	return e
}

// TestEnergy checks how much of ‖x‖² the order-≤2 coefficients keep. Theory (Mallat 2012,
// Prop. 2.5 and Th. 2.6; Bruna & Mallat 2013, §3): with a Littlewood-Paley sum LP ≤ 1 the
// transform is non-expansive, Σ‖S_m x‖² ≤ ‖x‖², and with LP = 1 it would conserve energy
// up to what orders ≥ 3 and the pruned paths (j2 ≤ j1, j ≥ J) carry, which Bruna & Mallat
// find to be small for natural images. Kymatio's J = 2 bank is not a tight frame:
// TestLittlewoodPaley finds LP between about 0.8 and 1 on the band |ω| ≤ 1.5 where these
// images live, so each of the two wavelet-modulus layers may lose up to 1 − min LP of what
// reaches it. We therefore assert min LP² ≤ ratio ≤ (π/3.1415)² + 1% (non-expansive; the 1%
// allows for aliasing in the subsampled intermediate layers), not the [0.9, 1] a tight
// frame would give. Subsampling by 2^J keeps a 4^−J share of the energy of a smooth map
// only on average over where the grid falls, so the ratio is averaged over the 4^J
// sub-pixel translations of the image.
func TestEnergy(t *testing.T) {
	const H, W, J = 28, 28, 2
	s, err := New(J, 8, H, W)
	if err != nil {
		t.Fatal(err)
	}
	_, minLP := littlewoodPaley(s.Bank, 1.5)
	rng := rand.New(rand.NewPCG(7, 8))
	trials := 4
	if testing.Short() {
		trials = 1
	}
	for trial := 0; trial < trials; trial++ {
		img := blobs(rng, H, W)
		var ex, es float64
		for _, v := range img {
			ex += v * v
		}
		for p := 0; p < 1<<J; p++ {
			for q := 0; q < 1<<J; q++ {
				// 4^J · (mean over the 4^J translations) of Σ‖S x‖².
				es += energy(transform64(t, s, shift(img, H, W, p, q)))
			}
		}
		ratio := es / ex
		t.Logf("trial %d: Σ‖Sx‖²/‖x‖² = %.4f (min LP on the band %.3f)", trial, ratio, minLP)
		if lo, hi := minLP*minLP, math.Pow(math.Pi/3.1415, 2)+0.01; ratio < lo || ratio > hi {
			t.Errorf("trial %d: Σ‖Sx‖²/‖x‖² = %.4f, want in [%.3f, %.3f]", trial, ratio, lo, hi)
		}
	}
}

// TestTranslationInvariance: a scattering of scale 2^J changes little when the image moves
// by a pixel, ‖Sx − Sx_τ‖ ≤ C·2^−J·|τ|·‖x‖ (Mallat 2012, Th. 2.10), while an unrelated image
// of the same kind lies far away. With J = 2 a one-pixel shift is a quarter of the
// averaging scale, so we require the relative distance to stay below 2·|τ|/2^J (C = 2) and
// at least 2 times below that of the nearest of three unrelated images.
func TestTranslationInvariance(t *testing.T) {
	const H, W = 28, 28
	s, err := New(2, 8, H, W)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	dist := func(a, b [][]float64) float64 {
		var d float64
		for k := range a {
			for i := range a[k] {
				d += (a[k][i] - b[k][i]) * (a[k][i] - b[k][i])
			}
		}
		return math.Sqrt(d)
	}
	for trial := 0; trial < 3; trial++ {
		x := blobs(rng, H, W)
		Sx := transform64(t, s, x)
		norm := math.Sqrt(energy(Sx))
		var unrelated float64 = math.Inf(1)
		for k := 0; k < 3; k++ {
			unrelated = math.Min(unrelated, dist(Sx, transform64(t, s, blobs(rng, H, W)))/norm)
		}
		for _, tau := range [][2]int{{1, 0}, {0, 1}, {1, 1}} {
			d := dist(Sx, transform64(t, s, shift(x, H, W, tau[0], tau[1]))) / norm
			t.Logf("trial %d shift %v: relative distance %.4f, nearest unrelated image %.4f", trial, tau, d, unrelated)
			bound := 2 * math.Hypot(float64(tau[0]), float64(tau[1])) / 4
			if d > bound || d > unrelated/2 {
				t.Errorf("trial %d shift %v: relative distance %.4f, want ≤ %.3f and ≤ half an unrelated image's %.4f", trial, tau, d, bound, unrelated)
			}
		}
	}
}

func TestCache(t *testing.T) {
	const n, C, H, W = 7, 2, 9, 8
	rng := rand.New(rand.NewPCG(11, 12))
	pixels := make([]byte, n*C*H*W)
	labels := make([]byte, n)
	for i := range pixels {
		pixels[i] = byte(rng.IntN(256))
	}
	for i := range labels {
		labels[i] = byte(rng.IntN(3))
	}
	ds, err := datasets.NewImages([]int{C, H, W}, 3, pixels, labels)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Cache(ds, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, n*C*H*W)
	for i := 0; i < n; i++ {
		ds.Example(i, x[i*C*H*W:(i+1)*C*H*W])
	}
	want, err := Transform(2, 4, x, C, H, W)
	if err != nil {
		t.Fatal(err)
	}
	if sh := f.Shape(); f.Len() != n || f.NumClasses() != 3 || len(sh) != 3 || sh[0] != C*Channels(2, 4) || sh[1] != 2 || sh[2] != 2 {
		t.Fatalf("Len %d, NumClasses %d, Shape %v", f.Len(), f.NumClasses(), sh)
	}
	size := datasets.Size(f)
	dst := make([]float32, size)
	for i := 0; i < n; i++ {
		if got := f.Example(i, dst); got != int(labels[i]) || f.Label(i) != int(labels[i]) {
			t.Errorf("example %d: label %d / %d, want %d", i, got, f.Label(i), labels[i])
		}
		for k, v := range dst {
			if v != want[i*size+k] {
				t.Fatalf("example %d feature %d: cached %g, transform %g", i, k, v, want[i*size+k])
			}
		}
	}
	if _, err := Cache(ds, 4, 8); err == nil || !strings.Contains(err.Error(), "smaller than 2^J = 16") {
		t.Errorf("Cache with 2^J > H: %v", err)
	}
}
