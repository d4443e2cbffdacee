package prior

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// knownRows are n rows μ ± σᵢqᵢ (each sign of each i, repeated) for a random orthonormal
// basis q (Gram–Schmidt here): their covariance is exactly Σᵢ σᵢ²qᵢqᵢᵀ/d, eigenvalues
// σᵢ²/d, whatever μ is.
func knownRows(d, repeat int, sigma, mu []float64, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	q := make([][]float64, d)
	for i := range q {
		v := make([]float64, d)
		for j := range v {
			v[j] = rng.NormFloat64()
		}
		for _, u := range q[:i] {
			dot := 0.0
			for j := range v {
				dot += v[j] * u[j]
			}
			for j := range v {
				v[j] -= dot * u[j]
			}
		}
		n := 0.0
		for _, x := range v {
			n += x * x
		}
		for j := range v {
			v[j] /= math.Sqrt(n)
		}
		q[i] = v
	}
	var rows []float32
	for range repeat {
		for i := range d {
			for _, s := range []float64{1, -1} {
				for j := range d {
					rows = append(rows, float32(mu[j]+s*sigma[i]*q[i][j]))
				}
			}
		}
	}
	return rows
}

func rowsOf(x []float32, dim int) Rows {
	return func(lo, hi int, dst []float32) error {
		copy(dst, x[lo*dim:hi*dim])
		return nil
	}
}

// TestWhiteningClosedForm: for rows whose covariance C has known eigenvalues (σᵢ²/d, so
// λ₁ = 64/6), the map is s·(C + floor·λ₁·I)^(−1/2): M is symmetric, M·M·(C + floor·λ₁·I)
// is a multiple of the identity (C computed here by plain loops from the rows), and the
// mapped rows' mean squared norm is the rows' own (which fixes the multiple). The rows
// lie 600 times over (7,200 > one chunk of 512) about a mean far from 0, so the chunked,
// shifted float32 sums are exercised. (Those sums measure a direction of variance λ to
// about 10⁻⁶·λ₁/λ relative; here λ ≥ λ₁/1,600.)
func TestWhiteningClosedForm(t *testing.T) {
	const d, repeat = 6, 600
	sigma := []float64{0.5, 3, 1, 0.2, 2, 8}
	mu := []float64{20, -5, 7, 0, 1, 3}
	x := knownRows(d, repeat, sigma, mu, 1)
	n := len(x) / d
	const top = 64.0 / d
	for _, floor := range []float64{1e-7, 0.01, 0.3} {
		M, err := Whitening(n, d, rowsOf(x, d), floor, nil)
		if err != nil {
			t.Fatal(err)
		}
		var mean [d]float64
		for r := range n {
			for j := range d {
				mean[j] += float64(x[r*d+j]) / float64(n)
			}
		}
		var C [d][d]float64
		sq, msq := 0.0, 0.0
		for r := range n {
			for i := range d {
				for j := range d {
					C[i][j] += (float64(x[r*d+i]) - mean[i]) * (float64(x[r*d+j]) - mean[j]) / float64(n)
				}
				sq += float64(x[r*d+i]) * float64(x[r*d+i]) / float64(n)
				y := 0.0
				for k := range d {
					y += float64(x[r*d+k]) * float64(M[k*d+i])
				}
				msq += y * y / float64(n)
			}
		}
		if math.Abs(msq-sq) > 1e-4*sq {
			t.Errorf("floor %g: mean squared norm %g after the map, %g before", floor, msq, sq)
		}
		scale := 0.0
		for i := range d * d {
			scale = max(scale, math.Abs(float64(M[i])))
		}
		for i := range d {
			for j := range d {
				if a, b := float64(M[i*d+j]), float64(M[j*d+i]); math.Abs(a-b) > 1e-6*scale {
					t.Errorf("floor %g: M[%d][%d] = %g, M[%d][%d] = %g: not symmetric", floor, i, j, a, j, i, b)
				}
			}
		}
		var P [d][d]float64 // M·M·(C + floor·λ₁·I)
		for i := range d {
			for j := range d {
				for k := range d {
					for l := range d {
						reg := C[l][j]
						if l == j {
							reg += floor * top
						}
						P[i][j] += float64(M[i*d+k]) * float64(M[k*d+l]) * reg
					}
				}
			}
		}
		s2 := P[0][0]
		for i := range d {
			for j := range d {
				want := 0.0
				if i == j {
					want = s2
				}
				if math.Abs(P[i][j]-want) > 1e-3*s2 {
					t.Errorf("floor %g: (M·M·(C + floor·λ₁·I))[%d][%d] = %.6g, want %.6g", floor, i, j, P[i][j], want)
				}
			}
		}
	}
}

// TestWhiteningRefuses: what cannot be whitened is an error that says why.
func TestWhiteningRefuses(t *testing.T) {
	ok := knownRows(3, 2, []float64{1, 2, 3}, []float64{0, 0, 0}, 2)
	flat := make([]float32, 30)
	nan := append([]float32(nil), ok...)
	nan[4] = float32(math.NaN())
	failing := func(lo, hi int, dst []float32) error { return errors.New("no rows today") }
	for _, c := range []struct {
		n, dim int
		rows   Rows
		floor  float64
		msg    string
	}{
		{12, 0, rowsOf(ok, 3), 0.1, "features"},
		{12, MaxDim + 1, rowsOf(ok, 3), 0.1, "features"},
		{1, 3, rowsOf(ok, 3), 0.1, "at least 2"},
		{12, 3, rowsOf(ok, 3), 0, "floor"},
		{12, 3, rowsOf(ok, 3), math.NaN(), "floor"},
		{12, 3, rowsOf(ok, 3), 1.5, "floor"},
		{12, 3, rowsOf(ok, 3), 5e-324, "floor"},
		{10, 3, rowsOf(flat, 3), 0.1, "no variance"},
		{12, 3, rowsOf(nan, 3), 0.1, "NaN"},
		{12, 3, failing, 0.1, "no rows today"},
	} {
		if _, err := Whitening(c.n, c.dim, c.rows, c.floor, nil); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("n %d dim %d floor %v: error %v, want one saying %q", c.n, c.dim, c.floor, err, c.msg)
		}
	}
}

// TestApply: Apply is the product x·M, checked against plain loops.
func TestApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, d = 37, 9
	x, M := make([]float32, n*d), make([]float32, d*d)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range M {
		M[i] = float32(rng.NormFloat64())
	}
	got, err := Apply(x, d, M)
	if err != nil {
		t.Fatal(err)
	}
	for r := range n {
		for j := range d {
			want := 0.0
			for k := range d {
				want += float64(x[r*d+k]) * float64(M[k*d+j])
			}
			if math.Abs(float64(got[r*d+j])-want) > 1e-5*(1+math.Abs(want)) {
				t.Fatalf("(%d, %d): %g, want %g", r, j, got[r*d+j], want)
			}
		}
	}
	if _, err := Apply(x[:5], d, M); err == nil {
		t.Error("5 values of 9-value rows: no error")
	}
}

const testKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func resetMemo() {
	memo.Lock()
	memo.maps = nil
	memo.Unlock()
}

// TestMapCache: a map is computed once, written, and read back by a process that has
// not got it in memory; a damaged file (truncated, one bit flipped, another key's) is
// reported, recomputed and rewritten, never used.
func TestMapCache(t *testing.T) {
	dir := t.TempDir()
	want := []float32{1, 2, 3, 4}
	calls := 0
	compute := func() ([]float32, error) { calls++; return append([]float32(nil), want...), nil }
	resetMemo()
	M, use, err := Map(dir, testKey, 2, compute)
	if err != nil || use.Loaded || use.Problem != "" || calls != 1 {
		t.Fatalf("first call: %v %+v %v, %d computations", M, use, err, calls)
	}
	if _, use, _ = Map(dir, testKey, 2, compute); !use.Loaded || calls != 1 {
		t.Errorf("second call in one process: %+v, %d computations", use, calls)
	}
	resetMemo()
	M, use, err = Map(dir, testKey, 2, compute)
	if err != nil || !use.Loaded || calls != 1 || len(M) != 4 || M[3] != 4 {
		t.Errorf("from the file: %v %+v %v, %d computations", M, use, err, calls)
	}
	good, err := os.ReadFile(use.File)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)-40] ^= 1
	other := encodeMap(strings.Repeat("f", 64), 2, want)
	for _, c := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"truncated", good[:len(good)-3], "truncated"},
		{"bit flipped", flipped, "checksum"},
		{"another key's", other, "another map"},
		{"not a map", []byte("hello"), "not a privtrain prior map"},
	} {
		if err := os.WriteFile(use.File, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		resetMemo()
		before := calls
		_, u, err := Map(dir, testKey, 2, compute)
		if err != nil || u.Loaded || calls != before+1 || !strings.Contains(u.Problem, c.msg) {
			t.Errorf("%s: %+v %v, %d computations; want a problem saying %q and one computation", c.name, u, err, calls-before, c.msg)
		}
		if b, _ := os.ReadFile(use.File); !bytes.Equal(b, good) {
			t.Errorf("%s: the file was not rewritten", c.name)
		}
	}
	resetMemo()
	if _, _, err := Map(dir, "not hex", 2, compute); err == nil {
		t.Error("a key that is not 64 hex digits: no error")
	}
	if _, _, err := Map(t.TempDir(), testKey, 2, func() ([]float32, error) { return []float32{1}, nil }); err == nil {
		t.Error("a computed map of the wrong size: no error")
	}
	// A directory that cannot be made: computed, not cached, said so.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	resetMemo()
	if M, u, err := Map(filepath.Join(blocker, "sub"), testKey, 2, compute); err != nil || len(M) != 4 || !strings.Contains(u.Problem, "not cached") {
		t.Errorf("unwritable cache: %v %+v %v", M, u, err)
	}
}

// FuzzDecodeMap: no input makes the map file's reader panic or accept a file other than
// a well-formed one of the key and size asked for.
func FuzzDecodeMap(f *testing.F) {
	f.Add(encodeMap(testKey, 2, []float32{1, 2, 3, 4}))
	f.Add([]byte(mapMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		M, err := decodeMap(b, testKey, 2)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeMap(testKey, 2, M), b) {
			t.Fatalf("accepted a file that is not the encoding of what it read: %q", b)
		}
	})
}

// TestWhiteningIgnoresTheBasis: rows whose covariance has two pairs of equal eigenvalues,
// summed in another order (the rows reversed: the same covariance up to rounding, which
// is enough for the eigen-decomposition to pick other vectors within each pair), give
// the same map to 10⁻⁴ of its largest entry. (A map V·diag(w) without the final Vᵀ
// differs by up to its whole size here.)
func TestWhiteningIgnoresTheBasis(t *testing.T) {
	const d = 6
	x := knownRows(d, 100, []float64{1, 3, 3, 0.5, 2, 2}, []float64{1, 2, 3, 4, 5, 6}, 5)
	n := len(x) / d
	rev := make([]float32, len(x))
	for r := range n {
		copy(rev[r*d:(r+1)*d], x[(n-1-r)*d:(n-r)*d])
	}
	a, err := Whitening(n, d, rowsOf(x, d), 0.01, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Whitening(n, d, rowsOf(rev, d), 0.01, nil)
	if err != nil {
		t.Fatal(err)
	}
	scale := 0.0
	for _, v := range a {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4*scale {
			t.Fatalf("entry %d: %g, with the rows reversed %g (largest %g)", i, a[i], b[i], scale)
		}
	}
}
