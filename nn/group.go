package nn

import "fmt"

// grouper is implemented by both engines.
type grouper interface {
	setGroupSize(k int) error
	groupSize() int
}

func (n *nativeNet[T]) setGroupSize(k int) error {
	if err := n.ws.SetGroupSize(k); err != nil {
		return err
	}
	// A chunk of examples is k chunks of the program's rows: keep the rows one chunk.
	n.ws.SetChunkRows(max(1, n.train.Chunk()/k))
	return nil
}

func (n *nativeNet[T]) groupSize() int { return n.ws.GroupSize() }

func (n *net[T]) setGroupSize(k int) error { return n.ws.SetGroupSize(k) }

func (n *net[T]) groupSize() int { return n.ws.GroupSize() }

// SetGroupSize makes each example of ClippedGradient, Gradient and PerExampleGradient a
// group of k consecutive rows of the batch (k views of one example): example i's gradient
// is the mean of rows i·k … i·k+k−1's gradients, clipped as one, and the Stats' norms are
// per example (BatchSize/k of them). The batch size must be a multiple of k; a mask must
// mark a group's rows all real or all padding. Loss, Correct and Examples still count
// rows. k = 1 (the default) is one row per example. A Trainer sets it from
// TrainerConfig.Augmentation.Multiplicity.
func (m *Model) SetGroupSize(k int) error {
	g, ok := m.net.(grouper)
	if !ok {
		return fmt.Errorf("%w: the %v engine has no row groups", ErrSpec, m.engine)
	}
	if k < 1 || m.batch%k != 0 {
		return fmt.Errorf("%w: group size %d does not divide the batch size %d", ErrBatch, k, m.batch)
	}
	if err := g.setGroupSize(k); err != nil {
		return fmt.Errorf("nn: %w", err)
	}
	return nil
}

// GroupSize is the number of rows per example (SetGroupSize).
func (m *Model) GroupSize() int {
	if g, ok := m.net.(grouper); ok {
		return g.groupSize()
	}
	return 1
}
