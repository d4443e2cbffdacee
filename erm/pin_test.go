package erm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/erm/data"
)

// pinProblem is a small logistic problem built here from a PCG stream (not from the
// other tests' helpers or data.Synthetic), so that the pins depend only on the solvers.
func pinProblem(t *testing.T) *Problem {
	t.Helper()
	const n, d = 120, 4
	rng := rand.New(rand.NewPCG(28, 3))
	w := []float64{1, -2, 0.5, 1.5}
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for i := range n {
		row := x.RawRowView(i)
		z := 0.0
		for j := range row {
			row[j] = rng.Float64() - 0.5
			z += row[j] * w[j]
		}
		y[i] = 1
		if z+0.3*rng.NormFloat64() < 0 {
			y[i] = -1
		}
	}
	ds := &data.Dataset{X: x, Y: y}
	ds.Normalize()
	return &Problem{Data: ds, Loss: Logistic{}, Lambda: 0.05}
}

// TestPinnedPrivateSolvers is a bitwise pin, the one kind of test whose expected values
// come from the code itself: the digests were RECORDED FROM THE CODE BEFORE issue 28 moved
// erm's noise draws (Gaussian and Laplace) into internal/privrand, so the move is checked
// to change no bit of any private solver's seeded output. Never update a digest to make
// this pass: a change here means seeded erm runs no longer reproduce. The one deliberate
// re-record: DP-SCD and seqDP-SCD, whose noise issue 23 item 8 recalibrated (σ' the
// expected batch L = qN; seqDP-SCD's noise sized for the capped batch), re-recorded from
// that change alone with every other digest unchanged.
func TestPinnedPrivateSolvers(t *testing.T) {
	p := pinProblem(t)
	ball := pinProblem(t)
	ball.Radius = 0.5
	lasso := pinProblem(t)
	lasso.L1 = 0.01
	cols := pinProblem(t)
	cols.Data.NormalizeFeatures() // primalDP-SCD's assumption
	ls := LaplaceSettings{Epsilon: 1, Iterations: 12, BatchSize: 30}
	for _, c := range []struct {
		name string
		p    *Problem
		s    Solver
		want string
	}{
		{"DP-GD", p, &GD{LaplaceSettings: ls}, "7488cf871a5cba29cc6121a2807a0b875cfb7f3ec0a5831ccedf49b08a0e7e7c"},
		{"DP-SHB", p, &HeavyBall{LaplaceSettings: ls}, "1c67a7f205c19434791645a011462e3b506c82231b2814cee3c66ffaa9dcb818"},
		{"DP-NAG", p, &NAG{LaplaceSettings: ls}, "27d2eea817d4eb6164598570e5efe3240f6af266965d25909c9ed77db92db166"},
		{"DP-NAG-opt", p, &NAG{LaplaceSettings: ls, Optimal: true}, "4d1f6ea9846fbbb8dafd0f96b242fe47172926a17328a14d216e1e3bba478877"},
		{"DP-MASG", p, &MASG{LaplaceSettings: ls}, "bcfa60a99f688c67e3f31c82674594861c5619b9edb315f9db085effb8a1ba8e"},
		{"DP-MASG-opt", p, &MASG{LaplaceSettings: ls, Optimal: true}, "4d1f6ea9846fbbb8dafd0f96b242fe47172926a17328a14d216e1e3bba478877"},
		{"DP-GD (PL)", p, &GDPL{Epsilon: 1, Delta: 1e-3, Iterations: 6}, "1cb7c5894befb27e6c5264b1640b9c59d5af97d00e37d4e04ded9a4fc339820e"},
		{"DP-SVRG lasso", lasso, &SVRG{Epsilon: 1, Delta: 1e-3, Epochs: 2}, "2a116285fdd90ff115110aff12c1d60288b915392ae17a3a36ceb37ebabe9681"},
		{"DP-SVRG++", p, &SVRGPlusPlus{Epsilon: 1, Delta: 1e-3, Epochs: 2}, "3ba99af43f944f737d3242daad982c962fcc98b4eebb1bad21c38946ea2dd6af"},
		{"DP-AccMD", ball, &AccMD{Epsilon: 1, Delta: 1e-3, Iterations: 10}, "7395322f43c7e23b8f3ebf8d58161913b7f393e2b5c46b911322f32fafdb34cb"},
		{"DP-SCD", p, &SCD{Epsilon: 1, Delta: 1e-3, Epochs: 2, BatchSize: 10}, "e0c5ee78c5bbaeb04c658b5987b53724da590705a7a9d4a87ff968387f38a6f1"},
		{"seqDP-SCD", p, &SequentialSCD{Epsilon: 1, Delta: 1e-3, Epochs: 2, BatchSize: 10}, "24aab6784e298bb4226780cf2374e6832413e8cff34fbe50cf1f5f024185297a"},
		{"primalDP-SCD", cols, &PrimalSCD{Epsilon: 1, Delta: 1e-3, Epochs: 2, BatchSize: 2}, "ebc45cb3703af383cc5a19bc2edb8cb2c0fef882fd171bf7f087bc02aac794fe"},
	} {
		got, err := solveDigest(c.p, c.s, 7)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: digest of the seeded model %s, pinned %s", c.name, got, c.want)
		}
		// The pin covers the noise draws only if the noise reaches the model.
		if other, err := solveDigest(c.p, c.s, 8); err != nil || other == got {
			t.Errorf("%s: seed 8 gives digest %s (error %v), the same model as seed 7", c.name, other, err)
		}
	}
}

// solveDigest returns the SHA-256 of the float64 bits (little-endian) of the model that
// s releases on p with the erm stream of seed.
func solveDigest(p *Problem, s Solver, seed uint64) (string, error) {
	res, err := s.Solve(p, NewNoise(seed))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, v := range res.X {
		h.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
