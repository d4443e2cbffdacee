package dpoptim

import (
	"fmt"
	"math"
)

// The two step-size families of ADP-SGD (Wu, Wang, Cristali, Gu, Willett, "Adaptive
// differentially private empirical risk minimization", Algorithms 1 and 3). Both take
//
//	θ_{t+1} = θ_t − (η/b_{t+1})·(g_t + α_{t+1}·c_t),  c_t ~ N(0, σ²I),
//
// i.e. SGD with step η/b_{t+1} on a gradient whose noise multiplier α_{t+1}·z grows with
// b: the noise added to θ then decays like √η_t rather than η_t. As rules they do only
// the SGD part; a [Private] step supplies the noise, with multiplier z·NoiseScale(t) at
// step t, and records each step with its own multiplier. With ConstantNoise set, α ≡ 1 and
// the rule is DP-SGD with the same step sizes (the paper's baseline).

// ADPPolynomial is ADP-SGD with the polynomially decaying step η_t = Eta/b_{t+1},
// b_t = √(A + C·t), and the matched noise α_t² = b_t (Remark 4.1 of the paper). The paper's
// experiments use Eta = 1 and b_{t+1} = √(20 + t), i.e. A = 19, C = 1:
//
//	&dpoptim.ADPPolynomial{Eta: 1, A: 19, C: 1}
//
// Zero values: Eta is required (η = 0 is rejected at the first Step with ErrConfig); A = 0
// or C = 0 alone is legitimate, both 0 is rejected; ConstantNoise false is ADP-SGD.
type ADPPolynomial struct {
	Eta, A, C     float64
	ConstantNoise bool

	step int
}

// Name returns "ADP-SGD (polynomial)", or "SGD (polynomial)" with ConstantNoise.
func (p *ADPPolynomial) Name() string {
	if p.ConstantNoise {
		return "SGD (polynomial)"
	}
	return "ADP-SGD (polynomial)"
}

func (p *ADPPolynomial) check() error {
	if !(p.Eta > 0) || math.IsInf(p.Eta, 0) || !(p.A >= 0) || !(p.C >= 0) ||
		math.IsInf(p.A, 0) || math.IsInf(p.C, 0) || p.A+p.C == 0 {
		return fmt.Errorf("%w: %s: η = %v, a = %v, c = %v; want finite η > 0, a, c ≥ 0, a + c > 0",
			ErrConfig, p.Name(), p.Eta, p.A, p.C)
	}
	return nil
}

// b2 returns b_{t+1}² = A + C·(t+1), the step-size denominator squared of step t.
func (p *ADPPolynomial) b2(t int) float64 { return p.A + p.C*float64(t+1) }

// Rate returns the step size η/b_{t+1} of step t.
func (p *ADPPolynomial) Rate(t int) float64 { return p.Eta / math.Sqrt(p.b2(t)) }

// NoiseScale returns α_{t+1} = b_{t+1}^{1/2} = (A + C·(t+1))^{1/4}, or 1 with ConstantNoise.
func (p *ADPPolynomial) NoiseScale(t int) float64 {
	if p.ConstantNoise {
		return 1
	}
	return math.Sqrt(math.Sqrt(p.b2(t)))
}

// Step performs θ ← θ − η/b_{t+1}·g.
func (p *ADPPolynomial) Step(params, grad []float64) error {
	if err := checkLengths(p.Name(), params, grad, 0); err != nil {
		return err
	}
	if err := p.check(); err != nil {
		return err
	}
	descend(params, grad, p.Rate(p.step))
	p.step++
	return nil
}

// State returns the step; the rule keeps nothing else.
func (p *ADPPolynomial) State() State { return State{Step: p.step} }

// SetState restores a state returned by State.
func (p *ADPPolynomial) SetState(state State) error {
	r := readRuleState(p.Name(), state, nil, nil)
	if r.err != nil {
		return r.err
	}
	p.step = state.Step
	return nil
}

// ADPAdaGradNorm is ADP-SGD with the AdaGrad-norm step η_t = Eta/b_{t+1},
//
//	b_{t+1}² = b_t² + max(β_t·‖g̃_t‖², Nu),  b_0 = B0,
//
// and the deterministic noise proxy α_t² = √(B0² + t·C) (the paper takes C in [ν, G²]).
// β_t = Beta, or, with BoostPeriod P > 0, max(Beta/((t mod P) + 1), 1) as in the paper's
// CIFAR experiments (P = 195, one epoch).
//
// Deviation from the paper, for privacy: Algorithm 1 computes b_{t+1} from the clean
// minibatch gradient g_t, which would make the step size (and so the released iterates)
// depend on un-noised data. Here g̃_t is the gradient estimate the rule is handed — under a
// [Private] step the noisy, normalised (and possibly smoothed) one — so the update is
// post-processing of the Gaussian mechanism and costs no extra privacy. The noise inflates
// ‖g̃_t‖² by about d·(α_{t+1}·z·C/(q·n))² over ‖g_t‖², so b grows faster than in the paper.
//
// Build it as a literal, e.g. &ADPAdaGradNorm{Eta: 1, B0: 2, Nu: 1e-5, C: 0.5}. Zero
// values: Eta and Nu are required (0 is rejected at the first Step with ErrConfig); B0 = 0
// or C = 0 alone is legitimate, both 0 is rejected; Beta = 0 means the paper's β = 1;
// BoostPeriod 0 means no boost; ConstantNoise false is ADP-SGD.
type ADPAdaGradNorm struct {
	Eta, B0, Nu, C float64
	Beta           float64 // β > 0; 0 means 1
	BoostPeriod    int
	ConstantNoise  bool

	step int
	b2   float64 // b_t², set from B0 at the first step
	init bool
}

// Name returns "ADP-SGD (AdaGrad-norm)", or "SGD (AdaGrad-norm)" with ConstantNoise.
func (a *ADPAdaGradNorm) Name() string {
	if a.ConstantNoise {
		return "SGD (AdaGrad-norm)"
	}
	return "ADP-SGD (AdaGrad-norm)"
}

func (a *ADPAdaGradNorm) check() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !(a.Eta > 0) || !finite(a.Eta) || !(a.B0 >= 0) || !finite(a.B0) || !(a.Nu > 0) || !finite(a.Nu) ||
		!(a.C >= 0) || !finite(a.C) || a.B0 == 0 && a.C == 0 || !(a.Beta >= 0) || !finite(a.Beta) || a.BoostPeriod < 0 {
		return fmt.Errorf("%w: %s: η = %v, b₀ = %v, ν = %v, C = %v, β = %v, period %d; want finite η > 0, "+
			"b₀ ≥ 0, ν > 0, C ≥ 0 with b₀ or C > 0, β ≥ 0 (0 means 1), period ≥ 0",
			ErrConfig, a.Name(), a.Eta, a.B0, a.Nu, a.C, a.Beta, a.BoostPeriod)
	}
	return nil
}

// NoiseScale returns α_{t+1} = (B0² + (t+1)·C)^{1/4}, or 1 with ConstantNoise.
func (a *ADPAdaGradNorm) NoiseScale(t int) float64 {
	if a.ConstantNoise {
		return 1
	}
	return math.Sqrt(math.Sqrt(a.B0*a.B0 + float64(t+1)*a.C))
}

// beta returns β, with the zero value meaning 1.
func (a *ADPAdaGradNorm) beta() float64 {
	if a.Beta == 0 {
		return 1
	}
	return a.Beta
}

// boost returns β_t.
func (a *ADPAdaGradNorm) boost(t int) float64 {
	if a.BoostPeriod > 0 {
		return math.Max(a.beta()/float64(t%a.BoostPeriod+1), 1)
	}
	return a.beta()
}

// Rate returns the step size η/b_{t+1} the rule used at step t when t is the last step
// it took, and NaN otherwise: b depends on the noisy gradients, so the rule knows no
// other step's rate. It lets a caller that reports the learning rate after a step
// (cmd/train's metrics) report the one used; it is not a schedule fixed in advance.
func (a *ADPAdaGradNorm) Rate(t int) float64 {
	if !a.init || a.step == 0 || t != a.step-1 {
		return math.NaN()
	}
	return a.Eta / math.Sqrt(a.b2)
}

// Step updates b and performs θ ← θ − η/b_{t+1}·g̃.
func (a *ADPAdaGradNorm) Step(params, grad []float64) error {
	if err := checkLengths(a.Name(), params, grad, 0); err != nil {
		return err
	}
	if err := a.check(); err != nil {
		return err
	}
	if !a.init {
		a.b2, a.init = a.B0*a.B0, true
	}
	norm2 := 0.0
	for _, g := range grad {
		norm2 += g * g
	}
	b2 := a.b2 + math.Max(a.boost(a.step)*norm2, a.Nu)
	if math.IsNaN(b2) || math.IsInf(b2, 0) {
		return fmt.Errorf("%w: %s: b² = %v at step %d", ErrNonFinite, a.Name(), b2, a.step)
	}
	descend(params, grad, a.Eta/math.Sqrt(b2))
	a.b2 = b2
	a.step++
	return nil
}

// State returns the step and the scalar "b2" (b_t²; absent before the first step).
func (a *ADPAdaGradNorm) State() State {
	s := State{Step: a.step}
	if a.init {
		s.Scalars = map[string]float64{"b2": a.b2}
	}
	return s
}

// SetState restores a state returned by State.
//
// For checkpoints written before State had scalars, b_t² may also come as a vector "b2"
// of length 0 (not yet set) or 1.
func (a *ADPAdaGradNorm) SetState(state State) error {
	if v, ok := state.Vectors["b2"]; ok && len(state.Vectors) == 1 && len(v) <= 1 && state.Scalars == nil {
		state.Vectors = nil
		if len(v) == 1 {
			state.Scalars = map[string]float64{"b2": v[0]}
		}
	}
	r := readRuleState(a.Name(), state, nil, []string{"b2"})
	b2, init := r.scalar("b2")
	if init && !(b2 >= 0) {
		r.fail("scalar \"b2\" = %v, want b² ≥ 0", b2)
	}
	if r.err != nil {
		return r.err
	}
	a.step, a.b2, a.init = state.Step, b2, init
	return nil
}
