package privrand

import "math/rand/v2"

// The privacy noise: every Gaussian and Laplace draw of a private mechanism in the module
// is one of these. Each draws from r in index order, one draw (Gaussian) or two (Laplace)
// per entry, so that a seeded run is reproducible and a pin of its output checks the
// order. A scale of 0 draws nothing and leaves v unchanged (a non-private reference run
// spends no draws). The functions take the *rand.Rand of a Source, as the samplers do, so
// that an API handing one generator around (erm's Solve) draws noise and batches from
// it; a holder of a Source calls the methods of the same names.
//
// Gaussian draws are math/rand/v2's ziggurat NormFloat64, Laplace draws the difference of
// two of its ExpFloat64: both are floating-point samplers, with the caveats of Mironov
// (CCS 2012) on the low bits of floating-point noise, as in Opacus and TF Privacy.

// AddGaussian adds std·Z_j to v[j] for j = 0, 1, …, len(v)−1, where Z_j is the j-th
// r.NormFloat64(): iid N(0, std²) noise. std = 0 draws nothing.
func AddGaussian(r *rand.Rand, v []float64, std float64) {
	if std == 0 {
		return
	}
	for j := range v {
		v[j] += std * r.NormFloat64()
	}
}

// AddGaussianAt adds std·Z_k to v[idx[k]] for k = 0, 1, …, len(idx)−1 (Z_k the k-th
// r.NormFloat64()): noise on the coordinates a step touched, as coordinate-descent
// mechanisms release them. A repeated index gets one draw per occurrence. std = 0 draws
// nothing.
func AddGaussianAt(r *rand.Rand, v []float64, idx []int, std float64) {
	if std == 0 {
		return
	}
	for _, i := range idx {
		v[i] += std * r.NormFloat64()
	}
}

// AddLaplace adds b·(E_j − E′_j) to v[j] for j = 0, 1, …, len(v)−1, where E_j and E′_j are
// consecutive r.ExpFloat64() draws: iid Laplace noise of scale b (density
// exp(−|x|/b)/(2b), variance 2b², E|X| = b). The scale is b, as the Laplace mechanism
// needs it, not the standard deviation √2·b. b = 0 draws nothing.
func AddLaplace(r *rand.Rand, v []float64, b float64) {
	if b == 0 {
		return
	}
	for j := range v {
		v[j] += b * (r.ExpFloat64() - r.ExpFloat64())
	}
}

// AddGaussian adds iid N(0, std²) noise to every entry of v ([AddGaussian] on s's draws).
// A pending PrefetchGaussian of len(v) values from s's present state supplies the draws.
func (s *Source) AddGaussian(v []float64, std float64) {
	if s.takePrefetch(v, std) {
		return
	}
	AddGaussian(s.rng, v, std)
}

// AddLaplace adds iid Laplace(b) noise to every entry of v ([AddLaplace] on s's draws).
func (s *Source) AddLaplace(v []float64, b float64) { AddLaplace(s.rng, v, b) }
