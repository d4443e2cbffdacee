package traincmd

import (
	"fmt"
	"io"
	"math"

	"github.com/privtrain/privtrain/training"
)

// A run's session: the state its step and epoch callbacks share, the checkpoints they
// write, and what a run that stops says about the privacy no ledger records.

// run state shared by the callbacks.
type session struct {
	o       *options
	trainer *training.Trainer
	out     *reporter
	metrics *metricsLog
	// savedStep is the step of the last checkpoint written (−1: none).
	savedStep int
	// recorded is the step and ε of the last ledger on disk: the last checkpoint
	// written, or the one resumed (step 0, ε 0 for a fresh run). Steps after it
	// have spent privacy that no file records until the next successful write.
	recorded struct {
		step int
		eps  float64
	}
	stderr io.Writer
	// budget is the run's reservation in the budget store (nil: none, such as a
	// -distributed job's ranks other than 0).
	budget *runBudget
}

// interruptedWhere says where an interrupted run stopped: "after step 5 of 16 (in epoch
// 1 of 2)", or "(after epoch 1 of 2)" at an epoch's end.
func interruptedWhere(step int, p training.Plan) string {
	if step == 0 {
		return fmt.Sprintf("interrupted before the first of %d steps", p.Steps)
	}
	return fmt.Sprintf("interrupted after step %d of %d (%s)", step, p.Steps, epochPosition(step, p))
}

// epochPosition says where step (steps done) lies: "in epoch 1 of 2" when an epoch is
// under way, "after epoch 1 of 2" at its end.
func epochPosition(step int, p training.Plan) string {
	if step%p.StepsPerEpoch == 0 {
		return fmt.Sprintf("after epoch %d of %d", step/p.StepsPerEpoch, p.Epochs)
	}
	return fmt.Sprintf("in epoch %d of %d", step/p.StepsPerEpoch+1, p.Epochs)
}

func (s *session) save() error {
	c, err := s.trainer.Checkpoint()
	if err != nil {
		return err
	}
	if err := saveCheckpoint(s.o.checkpoint, c); err != nil {
		return fileError("checkpoint", s.o.checkpoint, err)
	}
	s.savedStep = c.Step
	s.recorded.step = c.Step
	if spent, err := s.trainer.Spent(); err == nil {
		s.recorded.eps = spent.Epsilon
	}
	return nil
}

// reportUnrecorded says, for a private run stopping on an error, which steps spent
// privacy that no checkpoint's ledger records (a checkpoint write failed, training
// diverged, or no -checkpoint was given): the ledger lives in the checkpoint, so
// without this line the spending of those steps would be known nowhere. The stop
// comes at the first failed write, which names its cause (a full disk: "no space
// left on device"); a write probe before the first step could not see a disk that
// fills later.
func (s *session) reportUnrecorded() {
	if s.trainer == nil || s.trainer.Ledger() == nil {
		return
	}
	spent, err := s.trainer.Spent()
	if err != nil || (s.trainer.Steps() <= s.recorded.step && !(spent.Epsilon > s.recorded.eps)) {
		return
	}
	// A step that failed (parameters overflowing) is not counted in Steps but its
	// spending may be in the ledger already: it ran.
	last := max(s.trainer.Steps(), s.recorded.step+1)
	where := "no -checkpoint FILE was given"
	switch {
	case s.o.checkpoint != "" && s.savedStep >= 0:
		where = fmt.Sprintf("the last checkpoint written, %s, records step %d", s.o.checkpoint, s.recorded.step)
	case s.o.checkpoint != "" && s.o.resume != "":
		where = fmt.Sprintf("no checkpoint was written; %s records step %d", s.o.resume, s.recorded.step)
	case s.o.checkpoint != "":
		where = "no checkpoint was written"
	}
	steps := fmt.Sprintf("steps %d to %d", s.recorded.step+1, last)
	if last == s.recorded.step+1 {
		steps = fmt.Sprintf("step %d", last)
	}
	fmt.Fprintf(s.stderr, "train: privacy: %s ran and spent privacy that no ledger records: ε %.4g → %.4g at δ = %g (%s); count ε = %.4g against this data set's budget\n",
		steps, s.recorded.eps, spent.Epsilon, s.trainer.Plan().Delta, where, spent.Epsilon)
}

// stepHook, when set by a test, runs after every step (to interrupt a run at a chosen
// step). It must be nil outside tests.
var stepHook func(training.StepProgress)

func (s *session) onStep(p training.StepProgress) error {
	s.out.step(p)
	if stepHook != nil {
		stepHook(p)
	}
	// A NaN loss with no examples yet this epoch is "no loss"; otherwise a non-finite
	// loss means the parameters overflowed: stop before checkpointing them.
	if math.IsInf(p.Loss, 0) || (math.IsNaN(p.Loss) && p.BatchSize > 0) {
		return s.diverged(p)
	}
	if s.o.checkpointEvery > 0 && p.GlobalStep%s.o.checkpointEvery == 0 && p.Step != p.StepsPerEpoch {
		return s.save()
	}
	return nil
}

// diverged is the error that stops a run whose training loss became non-finite at
// step p: what happened, what was kept, and what to try.
func (s *session) diverged(p training.StepProgress) error {
	kept, try := s.divergenceAdvice()
	return fmt.Errorf("training diverged at step %d of %d: the training loss is %v, the parameters overflowed (%s); try %s",
		p.GlobalStep, p.TotalSteps, p.Loss, kept, try)
}

// divergenceAdvice says which checkpoint a diverged run keeps and what to try.
func (s *session) divergenceAdvice() (kept, try string) {
	kept = "no checkpoint was written"
	if s.savedStep >= 0 {
		kept = fmt.Sprintf("%s keeps step %d", s.o.checkpoint, s.savedStep)
	} else if s.o.checkpoint == "" {
		kept = "nothing was written"
	}
	try = fmt.Sprintf("a lower -lr (now %g)", s.o.lr)
	if private(s.o.optimizer) {
		try += fmt.Sprintf(", a smaller -clip (now %g)", s.o.clip)
	}
	if s.o.lrSchedule == "constant" {
		try += ", a decaying -lr-schedule or -warmup-steps"
	}
	if !s.o.float64 {
		try += ", or -float64"
	}
	return kept, try
}

func (s *session) onEpoch(m training.EpochMetrics) error {
	s.out.epoch(m, s.trainer.Plan())
	if err := s.metrics.write(m); err != nil {
		return fmt.Errorf("-metrics %s: %w", s.o.metrics, err)
	}
	if s.o.checkpoint != "" {
		return s.save()
	}
	return nil
}
