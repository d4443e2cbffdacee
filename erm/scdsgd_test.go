package erm

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/erm/data"
)

// TestSCDBaselineSGDNoiselessIsGD: with the noise off, no clipping and one
// batch of all N examples per round, the baseline is gradient descent, here
// written out with the logistic derivative −y/(1+e^{yz}) by hand.
func TestSCDBaselineSGDNoiselessIsGD(t *testing.T) {
	p := normalizedProblem(t, Logistic{}, 40, 5, 0.01, 3)
	const eta, rounds = 0.7, 3
	s := &SCDBaselineSGD{Epsilon: math.Inf(1), Epochs: rounds, BatchSize: p.Len(), Clip: math.Inf(1), Step: eta, Sampling: Shuffled}
	res, err := s.Solve(p, NewNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	n, d := p.Len(), p.Dim()
	w := make([]float64, d)
	for range rounds {
		g := make([]float64, d)
		for i := range n {
			x := p.Data.X.RawRowView(i)
			y := p.Data.Y[i]
			z := 0.0
			for j := range d {
				z += x[j] * w[j]
			}
			dl := -y / (1 + math.Exp(y*z))
			for j := range d {
				g[j] += dl * x[j] / float64(n)
			}
		}
		for j := range d {
			w[j] -= eta * (g[j] + p.Lambda*w[j])
		}
	}
	if res.Iterations != rounds || !math.IsInf(res.Epsilon, 1) || res.Delta != 0 {
		t.Errorf("iterations %d, (ε, δ) = (%v, %v); want %d, (+Inf, 0)", res.Iterations, res.Epsilon, res.Delta, rounds)
	}
	for j := range d {
		if math.Abs(res.X[j]-w[j]) > 1e-12 {
			t.Fatalf("θ[%d] = %v, gradient descent by hand gives %v", j, res.X[j], w[j])
		}
	}
}

// TestSCDBaselineSGDClipsEachExample: ridge on x₁ = e₁, y₁ = 1000 (gradient
// −1000·e₁ at θ = 0, clipped to −C·e₁) and x₂ = e₂, y₂ = 0.1 (gradient
// −0.1·e₂, under C): one round of both gives θ = (η/2)(C, 0.1).
func TestSCDBaselineSGDClipsEachExample(t *testing.T) {
	ds := &data.Dataset{X: mat.NewDense(2, 2, []float64{1, 0, 0, 1}), Y: []float64{1000, 0.1}, L2Bound: 1, L1Bound: 1}
	p := &Problem{Data: ds, Loss: Squared{}, Lambda: 1e-4}
	const eta, clip = 0.8, 0.5
	s := &SCDBaselineSGD{Epsilon: math.Inf(1), Epochs: 1, BatchSize: 2, Clip: clip, Step: eta, Sampling: Shuffled}
	res, err := s.Solve(p, NewNoise(2))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{eta / 2 * clip, eta / 2 * 0.1}
	for j := range want {
		if math.Abs(res.X[j]-want[j]) > 1e-15 {
			t.Errorf("θ = %v, want %v", res.X, want)
			break
		}
	}
}

// TestSCDBaselineSGDNoiseCoversBudget: on all-zero examples every gradient
// vanishes, so after one round of q = 1 the model is pure noise,
// θ = −η·N(0, σ²C²I)/L. The σ measured from 4,000 coordinates must give at
// most the requested ε by the Gaussian mechanism's RDP α/(2σ²) and the
// classic conversion minimised over real α, ε = 1/(2σ²) + √(2 log(1/δ))/σ
// (a lower bound on what integer orders give), and not much less: the noise
// is neither short nor wasteful.
func TestSCDBaselineSGDNoiseCoversBudget(t *testing.T) {
	const n, d, eta, clip, eps, delta = 50, 4000, 0.5, 2.0, 1.0, 1e-3
	ds := &data.Dataset{X: mat.NewDense(n, d, nil), Y: make([]float64, n), L2Bound: 1, L1Bound: 1}
	p := &Problem{Data: ds, Loss: Squared{}, Lambda: 1e-4}
	s := &SCDBaselineSGD{Epsilon: eps, Delta: delta, Epochs: 1, BatchSize: n, Clip: clip, Step: eta, Sampling: Shuffled,
		AccountantOptions: []accountant.Option{accountant.WithOrders(accountant.OrdersUpTo(1024)), accountant.WithConversion(accountant.Classic)}}
	res, err := s.Solve(p, NewNoise(7))
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon > eps || res.Iterations != 1 {
		t.Fatalf("spent ε = %v in %d rounds, want ≤ %v in 1", res.Epsilon, res.Iterations, eps)
	}
	var ss float64
	for _, v := range res.X {
		ss += v * v
	}
	sigma := math.Sqrt(ss/d) * n / (eta * clip)
	got := 1/(2*sigma*sigma) + math.Sqrt(2*math.Log(1/delta))/sigma
	// 4,000 draws estimate σ within about 1.1 % (sd); ε ∝ 1/σ roughly.
	if got > eps*1.04 || got < eps*0.9 {
		t.Errorf("measured σ = %.4g gives ε = %.4g, want about %v (≤ %v·1.04)", sigma, got, eps, eps)
	}
}

func TestSCDBaselineSGDRefusesBadSettings(t *testing.T) {
	p := normalizedProblem(t, Hinge{}, 20, 3, 0.01, 1)
	for _, s := range []*SCDBaselineSGD{
		{Epsilon: 1, Delta: 1e-3, Step: 0},
		{Epsilon: 1, Delta: 1e-3, Step: math.Inf(1)},
		{Epsilon: 1, Delta: 1e-3, Step: 1, Clip: math.Inf(1)},
		{Epsilon: 1, Delta: 1e-3, Step: 1, BatchSize: 21},
		{Epsilon: 1, Delta: 0, Step: 1},
	} {
		if _, err := s.Solve(p, NewNoise(1)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", *s, err)
		}
	}
	raw := &Problem{Data: &data.Dataset{X: p.Data.X, Y: p.Data.Y}, Loss: Hinge{}, Lambda: 0.01}
	if _, err := (&SCDBaselineSGD{Epsilon: 1, Delta: 1e-3, Step: 1}).Solve(raw, NewNoise(1)); !errors.Is(err, ErrNoBound) {
		t.Errorf("unnormalised data: err = %v, want ErrNoBound", err)
	}
}
