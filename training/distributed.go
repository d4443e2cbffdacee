package training

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"

	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/nn"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// Data-parallel training (TrainerConfig.Reducer; docs/distributed.md). Every rank of the
// job runs a Trainer with the same configuration and draws the same global logical batch
// from the same sampler (the same seed, or a key rank 0 draws from the secure source and
// broadcasts), and keeps the sampled examples of its own shard: the contiguous block
// [⌊r·n/N⌋, ⌊(r+1)·n/N⌋) of the training set. The shards partition the set, so the union
// of the ranks' parts is exactly the one-process Poisson sample, whatever N: a checkpoint
// resumes under another N, and with a seed the run is the one-process run up to the order
// in which the clipped per-example gradients are added. Each rank adds its examples'
// clipped gradients; one AllreduceSum adds the ranks' sums, losses and counts; rank 0
// alone takes the private step (records the step in its ledger, draws the noise, applies
// the rule) and broadcasts the new parameters (and adaptive clipping's C_t), which every
// other rank sets: the parameters are identical on every rank by construction, and the
// noise is drawn once. The other ranks keep no ledger, optimizer state or evaluations of
// their own: only rank 0's trainer may be checkpointed (Checkpoint refuses on the others),
// and the others' Spent is +Inf, an upper bound that claims nothing; their Ledger is empty.

// Reducer joins a Trainer to the other ranks of a data-parallel job (package internal/mpi
// implements it on MPI_COMM_WORLD). Every rank must call the methods in the same order
// with buffers of the same length; a rank that fails must end the job (MPI_Abort) rather
// than return, or the others wait for it.
type Reducer interface {
	// Rank is this process's rank, 0 ≤ Rank < Size; Size is the number of ranks ≥ 1.
	Rank() int
	Size() int
	// AllreduceSum replaces buf on every rank with the element-wise sum of all ranks' bufs.
	AllreduceSum(buf []float64) error
	// Broadcast copies root's buf into every other rank's buf, unchanged.
	Broadcast(buf []float64, root int) error
}

// ErrRanks reports ranks of a data-parallel job that disagree: on the run (different
// data, flags or checkpoints) or on a step's logical batch.
var ErrRanks = errors.New("training: the ranks of the distributed job disagree")

// errNotLeader is Checkpoint's error on ranks other than 0, whose ledgers are empty: their
// checkpoint would claim that nothing was spent.
var errNotLeader = errors.New("training: only rank 0 of a distributed job can be checkpointed: the other ranks record no ledger")

// distributed is a trainer's state as one rank of a data-parallel job.
type distributed struct {
	r          Reducer
	rank, size int
	lo, hi     int       // this rank's shard of the training set: [lo, hi)
	local      []int     // this step's examples of the shard, reused
	sum        []float64 // the allreduce buffer: gradient, then the step's scalars
	bcast      []float64 // the broadcast buffer: parameters, then C_t and a status
	clip       float64   // C_t from rank 0 (adaptive clipping on ranks > 0)
}

// newDistributed checks the reducer and returns rank's part of a job over n examples.
func newDistributed(r Reducer, n, d int) (*distributed, error) {
	rank, size := r.Rank(), r.Size()
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("%w: rank %d of %d", ErrConfig, rank, size)
	}
	if size > n {
		return nil, fmt.Errorf("%w: %d ranks for %d training examples: every rank needs a shard of at least one example", ErrConfig, size, n)
	}
	lo, hi := shardBounds(n, rank, size)
	return &distributed{r: r, rank: rank, size: size, lo: lo, hi: hi,
		sum: make([]float64, d+stepScalars), bcast: make([]float64, d+2)}, nil
}

// shardBounds returns rank's block [⌊rank·n/size⌋, ⌊(rank+1)·n/size⌋) of n examples.
func shardBounds(n, rank, size int) (lo, hi int) {
	at := func(r int) int { return int(int64(r) * int64(n) / int64(size)) }
	return at(rank), at(rank + 1)
}

// leader reports whether t writes what the run produces: rank 0, or the one process.
func (t *Trainer) leader() bool { return t.dist == nil || t.dist.rank == 0 }

// shard returns the indices of idx (a logical batch) in this rank's shard, in idx's order:
// idx itself for one process.
func (t *Trainer) shard(idx []int) []int {
	if t.dist == nil {
		return idx
	}
	d := t.dist
	d.local = d.local[:0]
	for _, i := range idx {
		if i >= d.lo && i < d.hi {
			d.local = append(d.local, i)
		}
	}
	return d.local
}

// The scalars after the gradient in the allreduce buffer: loss, correct, unclipped, and
// the agreement values of the step's logical batch (agreeLen of them).
const stepScalars = 3 + agreeLen

// reduce adds the ranks' clipped sums (into grad), losses and counts, and checks that
// every rank drew the logical batch idx.
func (t *Trainer) reduce(idx []int, loss float64, correct, unclipped int) (float64, int, int, error) {
	d := t.dist
	buf := d.sum
	n := copy(buf, t.grad)
	buf[n], buf[n+1], buf[n+2] = loss, float64(correct), float64(unclipped)
	h := fnv.New64a()
	var b [8]byte
	for _, i := range idx {
		binary.LittleEndian.PutUint64(b[:], uint64(i))
		h.Write(b[:])
	}
	agreeFill(buf[n+3:], h.Sum64())
	if err := d.r.AllreduceSum(buf); err != nil {
		return 0, 0, 0, err
	}
	if !agreed(buf[n+3:], d.size) {
		return 0, 0, 0, fmt.Errorf("%w: the ranks drew different logical batches (this rank: %d examples); their samplers are out of step", ErrRanks, len(idx))
	}
	copy(t.grad, buf[:n])
	return buf[n], int(buf[n+1]), int(buf[n+2]), nil
}

// update takes the optimizer step of a logical batch of size examples: the step itself in
// one process; in a job rank 0 takes it and broadcasts the parameters, C_t and whether
// the step failed, which every other rank takes over, so that all stop at a failed step.
func (t *Trainer) update(size, unclipped int) error {
	if t.dist == nil {
		return t.optimizerStep(size, unclipped)
	}
	d := t.dist
	buf := d.bcast
	p := len(t.params)
	var stepErr error
	if d.rank == 0 {
		stepErr = t.optimizerStep(size, unclipped)
		copy(buf, t.params)
		buf[p], buf[p+1] = t.adaptiveClip(), 0
		if stepErr != nil {
			buf[p+1] = 1
		}
	}
	if err := d.r.Broadcast(buf, 0); err != nil {
		return err
	}
	if buf[p+1] != 0 {
		if stepErr != nil {
			return stepErr
		}
		return fmt.Errorf("%w: rank 0's private step failed (its error is in its output)", nn.ErrParams)
	}
	if d.rank != 0 {
		copy(t.params, buf[:p])
		d.clip = buf[p]
	}
	return nil
}

// adaptiveClip is C_t: the private step's on rank 0 (or the one process), the one rank 0
// broadcast on the others.
func (t *Trainer) adaptiveClip() float64 {
	if !t.adaptive() {
		return 0
	}
	if t.dist != nil && t.dist.rank != 0 {
		return t.dist.clip
	}
	return t.private.ClipNorm()
}

// syncRanks runs at the start of Run on every rank: it checks that the ranks agree on the
// run (plan, data fingerprint, settings, step, the seeded sampler's state) and then sets
// every rank's parameters, secure sampler key, augmentation key and C_t to rank 0's, so
// that a run with random initial weights or a secure sampler starts identical everywhere
// (a checkpoint's secure sampler restores with a fresh key on each rank).
func (t *Trainer) syncRanks() error {
	d := t.dist
	h := fnv.New64a()
	fmt.Fprintf(h, "%+v\x00%+v\x00%d\x00%d\x00%d\x00%v\x00", t.plan, t.dataset, t.step, len(t.params), t.views(), t.features)
	for _, k := range slices.Sorted(maps.Keys(t.cfg.Settings)) {
		fmt.Fprintf(h, "%s=%s\x00", k, t.cfg.Settings[k])
	}
	fmt.Fprintf(h, "%s\x00%x\x00%v", t.sampler.kind(), t.sampler.state(), t.sampler.perm)
	buf := make([]float64, agreeLen)
	agreeFill(buf, h.Sum64())
	if err := d.r.AllreduceSum(buf); err != nil {
		return err
	}
	if !agreed(buf, d.size) {
		return fmt.Errorf("%w: their plans, data, settings, step or sampler state differ; give every rank the same flags, the same data and the same -resume checkpoint", ErrRanks)
	}
	// Rank 0's state: parameters, then the secure sampler's key in 16-bit pieces, the
	// augmentation key in 16-bit pieces, C_t.
	p := len(t.params)
	secure := t.sampler.kind() == checkpoint.SamplerSecure
	state := make([]float64, p+16+4+1)
	var key [32]byte
	if d.rank == 0 {
		t.model.Params(t.params)
		copy(state, t.params)
		if secure {
			var err error
			if key, err = privrand.NewSecureKey(); err != nil {
				return err
			}
			for i := range 16 {
				state[p+i] = float64(binary.LittleEndian.Uint16(key[2*i:]))
			}
		}
		if t.aug != nil {
			for i := range 4 {
				state[p+16+i] = float64(uint16(t.aug.key >> (16 * i)))
			}
		}
		state[p+20] = t.adaptiveClip()
	}
	if err := d.r.Broadcast(state, 0); err != nil {
		return err
	}
	if d.rank != 0 {
		if err := t.model.SetParams(state[:p]); err != nil {
			return err
		}
		for i := range 16 {
			binary.LittleEndian.PutUint16(key[2*i:], uint16(state[p+i]))
		}
		if t.aug != nil {
			t.aug.key = 0
			for i := range 4 {
				t.aug.key |= uint64(uint16(state[p+16+i])) << (16 * i)
			}
		}
		d.clip = state[p+20]
	}
	if secure {
		t.sampler.src = privrand.NewKeyed(key, privrand.Sampler)
	}
	return nil
}

// agreeLen values carry a 64-bit hash in 8-bit pieces v and their squares: after a sum over
// N ranks, N·Σv² = (Σv)² for every piece if and only if all ranks' pieces are equal
// (Cauchy–Schwarz), and every rank sees the same sums, so all ranks find a disagreement
// together. The sums are integers below 2⁵³ (exact in float64) and the
// products below 2⁶⁴ for any N < 2²⁴.
const agreeLen = 16

func agreeFill(buf []float64, h uint64) {
	for i := range 8 {
		v := float64(uint8(h >> (8 * i)))
		buf[i], buf[8+i] = v, v*v
	}
}

func agreed(buf []float64, n int) bool {
	for i := range 8 {
		s, sq := uint64(buf[i]), uint64(buf[8+i])
		if uint64(n)*sq != s*s || math.Trunc(buf[i]) != buf[i] {
			return false
		}
	}
	return true
}
