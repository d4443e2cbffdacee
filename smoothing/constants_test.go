package smoothing

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Tables 3 and 4 of the DP-LSSGD paper's appendix (3 decimals, the same row for
// d = 1000, 10000, 100000).
func TestGammaBetaPaperTables(t *testing.T) {
	gamma := []float64{0.447, 0.333, 0.277, 0.243, 0.218}
	beta := []float64{0.268, 0.185, 0.149, 0.128, 0.114}
	for _, d := range []int{1000, 10000, 100000} {
		for i := range gamma {
			sigma := float64(i + 1)
			g, _ := Gamma(sigma, d)
			b, _ := Beta(sigma, d)
			if math.Round(g*1000)/1000 != gamma[i] {
				t.Errorf("γ(%v, %d) = %.6f, Table 3: %v", sigma, d, g, gamma[i])
			}
			if math.Round(b*1000)/1000 != beta[i] {
				t.Errorf("β(%v, %d) = %.6f, Table 4: %v", sigma, d, b, beta[i])
			}
		}
	}
}

// The digest's higher-precision values (§1.5, 6 decimals).
func TestGammaBetaDigestTable(t *testing.T) {
	cases := []struct {
		sigma       float64
		d           int
		gamma, beta float64
	}{
		{0.2, 2, 0.777778, 0.654321}, {0.5, 4, 0.583333, 0.402778},
		{1, 2, 0.600000, 0.520000}, {1, 3, 0.500000, 0.375000},
		{1, 4, 0.466667, 0.315556}, {1, 5, 0.454545, 0.289256},
		{1, 10, 0.447273, 0.268628}, {1, 100, 0.447214, 0.268328},
		{2, 10, 0.333985, 0.187722}, {2, 100, 0.333333, 0.185185},
		{3, 100, 0.277350, 0.149342}, {4, 100, 0.242536, 0.128401},
		{5, 10, 0.223450, 0.128600}, {5, 100, 0.218218, 0.114305},
		{10, 100, 0.156174, 0.079991},
	}
	for _, c := range cases {
		for name, f := range map[string]func(float64, int) (float64, error){
			"Gamma": Gamma, "GammaSum": GammaSum, "Beta": Beta, "BetaSum": BetaSum,
		} {
			want := c.gamma
			if name[0] == 'B' {
				want = c.beta
			}
			got, err := f(c.sigma, c.d)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 5e-7 {
				t.Errorf("%s(%v, %d) = %.7f, digest %v", name, c.sigma, c.d, got, want)
			}
		}
	}
}

// Propositions 1 and 2 equal the defining sums for every d, including d = 1 (both 1).
func TestClosedFormsEqualSums(t *testing.T) {
	for _, sigma := range []float64{0, 1e-6, 0.01, 0.2, 1, 3, 10, 100} {
		for _, d := range []int{1, 2, 3, 4, 5, 7, 16, 33, 100, 1000, 26010} {
			t.Run(fmt.Sprintf("σ=%v/d=%d", sigma, d), func(t *testing.T) {
				g, _ := Gamma(sigma, d)
				gs, _ := GammaSum(sigma, d)
				b, _ := Beta(sigma, d)
				bs, _ := BetaSum(sigma, d)
				if math.Abs(g-gs) > 1e-12 {
					t.Errorf("γ: closed form %v, sum %v", g, gs)
				}
				if math.Abs(b-bs) > 1e-12 {
					t.Errorf("β: closed form %v, sum %v", b, bs)
				}
				if d == 1 || sigma == 0 {
					if g != 1 && math.Abs(g-1) > 1e-15 || math.Abs(b-1) > 1e-15 {
						t.Errorf("γ = %v, β = %v, want 1", g, b)
					}
				}
			})
		}
	}
}

func TestGammaBetaLimitsAndZeta(t *testing.T) {
	for _, sigma := range []float64{0.5, 1, 7} {
		g, _ := Gamma(sigma, 1000000)
		b, _ := Beta(sigma, 1000000)
		if want := 1 / math.Sqrt(1+4*sigma); math.Abs(g-want) > 1e-12 {
			t.Errorf("σ=%v: γ(σ, 10⁶) = %v, limit 1/√(1+4σ) = %v", sigma, g, want)
		}
		if want := (1 + 2*sigma) / math.Pow(1+4*sigma, 1.5); math.Abs(b-want) > 1e-12 {
			t.Errorf("σ=%v: β(σ, 10⁶) = %v, limit (1+2σ)/(1+4σ)^1.5 = %v", sigma, b, want)
		}
		for _, d := range []int{2, 9, 100} {
			z, _ := Zeta(sigma, d)
			bs, _ := BetaSum(sigma, d)
			var sum float64
			for i := 1; i <= d; i++ {
				l := 1 + 2*sigma - 2*sigma*math.Cos(2*math.Pi*float64(i)/float64(d))
				sum += (1 + 4*sigma) * (1 + 4*sigma) / (l * l)
			}
			if want := math.Sqrt(sum / float64(d)); math.Abs(z-want) > 1e-12 {
				t.Errorf("ζ(%v, %d) = %v, defining sum %v", sigma, d, z, want)
			}
			if math.Abs(z-(1+4*sigma)*math.Sqrt(bs)) > 1e-12 || z <= 1 {
				t.Errorf("ζ(%v, %d) = %v, want (1+4σ)√β > 1", sigma, d, z)
			}
		}
	}
}

// Monte Carlo, the meaning of the constants (Lemmas 4, 5): for x ~ N(0, I_d),
// E xᵀA⁻¹x = dγ and E‖A⁻¹x‖² = dβ. 400 draws at d = 1000 put the relative standard
// error near 0.3 %; the bound is 2 %.
func TestGammaBetaMonteCarlo(t *testing.T) {
	const d, draws, sigma = 1000, 400, 2.0
	s := mustSolver(t, d, sigma)
	rng := rand.New(rand.NewPCG(31, 32))
	u := make([]float64, d)
	var quad, energy float64
	for range draws {
		x := randomVector(rng, d)
		if err := s.Solve(u, x); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			quad += x[i] * u[i]
			energy += u[i] * u[i]
		}
	}
	g, _ := Gamma(sigma, d)
	b, _ := Beta(sigma, d)
	if got := quad / draws / d; math.Abs(got/g-1) > 0.02 {
		t.Errorf("E xᵀA⁻¹x / d = %v, γ = %v", got, g)
	}
	if got := energy / draws / d; math.Abs(got/b-1) > 0.02 {
		t.Errorf("E ‖A⁻¹x‖² / d = %v, β = %v", got, b)
	}
}

func TestConstantErrors(t *testing.T) {
	for _, f := range []func(float64, int) (float64, error){Gamma, Beta, Zeta, GammaSum, BetaSum} {
		for _, c := range []struct {
			sigma float64
			d     int
		}{{1, 0}, {-1, 5}, {math.NaN(), 5}, {math.Inf(1), 5}} {
			if _, err := f(c.sigma, c.d); !errors.Is(err, ErrInvalid) {
				t.Errorf("(%v, %d): err = %v, want ErrInvalid", c.sigma, c.d, err)
			}
		}
	}
}
