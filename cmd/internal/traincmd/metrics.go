package traincmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/privtrain/privtrain/cmd/internal/cli"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/jsonnum"
	"github.com/privtrain/privtrain/internal/safeio"
	"github.com/privtrain/privtrain/training"
)

// metricRecord is one line of the -metrics file. Values that do not exist are null: ε of
// non-private training (∞), test metrics without a test evaluation.
type metricRecord struct {
	Epoch         int      `json:"epoch"`
	Step          int      `json:"step"`
	Loss          *float64 `json:"loss"`
	TrainAccuracy *float64 `json:"train_accuracy"`
	TestLoss      *float64 `json:"test_loss"`
	TestAccuracy  *float64 `json:"test_accuracy"`
	Epsilon       *float64 `json:"epsilon"`
	// ClipNorm is the clip norm after the epoch (private training only): with -clipping
	// adaptive the C_t the next step uses, otherwise the fixed -clip.
	ClipNorm *float64 `json:"clip_norm,omitempty"`
	Seconds  float64  `json:"seconds"`
	// LearningRate is the rate of the epoch's last step; EMA the decay of the parameter
	// average whose test metrics these are (absent: the raw parameters').
	LearningRate *float64 `json:"learning_rate,omitempty"`
	EMA          float64  `json:"ema,omitempty"`
	// EvalSplit names the split of test_loss and test_accuracy: "test", or "validation"
	// (held out of the training set by -validation). Absent in files from before it.
	EvalSplit string `json:"eval_split,omitempty"`
}

// metricsLog writes the -metrics file and keeps the records for -plot.
type metricsLog struct {
	f       *os.File
	records []metricRecord
	ema     float64          // -ema (0: none)
	rate    dpoptim.Schedule // the learning rate of each step (nil: not recorded)
	split   string           // the evaluated split (evalTest, evalValidation)
}

// openMetrics creates the metrics file (path "" keeps the records in memory only). A
// resumed run appends to an existing file and reads its earlier records back, so that
// the file and the plot cover the whole run.
func openMetrics(path string, resumed bool) (*metricsLog, error) {
	l := &metricsLog{}
	if path == "" {
		return l, nil
	}
	// Nothing but a regular file is read or written (a FIFO would block train for
	// ever, a device or a link's target be written).
	if err := cli.CheckOutput("-metrics", path); err != nil {
		return nil, err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if resumed {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		old, err := safeio.OpenFile(path, os.O_RDONLY, 0)
		switch {
		case err == nil:
			sc := bufio.NewScanner(old)
			for line := 1; sc.Scan(); line++ {
				var r metricRecord
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					old.Close()
					return nil, fmt.Errorf("-metrics %s: line %d: %v", path, line, err)
				}
				l.records = append(l.records, r)
			}
			old.Close()
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("-metrics %s: %w", path, err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("-metrics %s: %w", path, err)
		}
	}
	f, err := safeio.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, exit.Usagef("-metrics %s: %v", path, err)
	}
	l.f = f
	return l, nil
}

func (l *metricsLog) write(m training.EpochMetrics) error {
	r := metricRecord{
		Epoch: m.Epoch, Step: m.Step, Loss: jsonnum.FiniteOrNil(m.TrainLoss),
		TrainAccuracy: jsonnum.FiniteOrNil(m.TrainAccuracy), TestLoss: jsonnum.FiniteOrNil(m.TestLoss),
		TestAccuracy: jsonnum.FiniteOrNil(m.TestAccuracy), Epsilon: jsonnum.FiniteOrNil(m.Epsilon), Seconds: m.Seconds,
		EMA: l.ema, EvalSplit: l.split,
	}
	if l.rate != nil && m.Step > 0 {
		r.LearningRate = jsonnum.FiniteOrNil(l.rate.Rate(m.Step - 1))
	}
	if m.ClipNorm > 0 {
		r.ClipNorm = jsonnum.FiniteOrNil(m.ClipNorm)
	}
	l.records = append(l.records, r)
	if l.f == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = l.f.Write(append(b, '\n'))
	return err
}

func (l *metricsLog) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
