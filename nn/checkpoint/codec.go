package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/internal/jsonnum"
	"github.com/privtrain/privtrain/internal/num"
	"github.com/privtrain/privtrain/internal/strictjson"
	"github.com/privtrain/privtrain/nn/tensorfile"
)

// The checkpoint codec: a Training laid out as a tensorfile.File (named tensors and
// string metadata) and read back, with everything checked that can be checked without a
// trainer. The on-disk schema:
//
//	metadata nn.kind          "privtrain-training/1"
//	         nn.model, nn.dtype, nn.optimizer, nn.noise, nn.sampler, nn.seed (seeded runs)
//	         nn.layout        JSON [{"name", "shape"}…] (ParamInfo)
//	         nn.plan          JSON, Plan's MarshalJSON
//	         nn.position      JSON positionJSON
//	         nn.dataset       JSON Fingerprint
//	         nn.settings      JSON {string: string}
//	         nn.ledger        JSON accountant.Ledger (private runs)
//	         nn.architecture  JSON Architecture (if the model has one)
//	         nn.loss          the model's loss, "focal:GAMMA" (absent: cross-entropy)
//	         nn.class_names   JSON [string…], the classes' names (if the data named them)
//	         nn.budget_head   JSON BudgetHead, the budget store's ledger head at save (if recorded)
//	tensors  params/<name>    F32 or F64 (the model's dtype), the parameter's shape
//	         optimizer/…      the optimizer's dpoptim.State (see optimizerTensors)
//	         sampler/state    U8, a seeded sampler's generator
//	         sampler/perm     I64, a shuffled epoch's permutation (mid-epoch only)
//	         ema/decay, ema/step, ema/params
//	                          the parameter average of a run with TrainerConfig.Averaging.EMA
//	                          (absent otherwise; see average.go)

// checkpointKind marks a training checkpoint inside the container's metadata.
const checkpointKind = "privtrain-training/1"

// Metadata keys and tensor names of a training checkpoint.
const (
	keyKind      = "nn.kind"
	keyModel     = "nn.model"
	keyDType     = "nn.dtype"
	keyLayout    = "nn.layout"
	keyOptimizer = "nn.optimizer"
	keyLedger    = "nn.ledger"
	keyPosition  = "nn.position"
	keyNoise     = "nn.noise"
	keySeed      = "nn.seed"
	keyDataset   = "nn.dataset"
	keySettings  = "nn.settings"
	keyPlan      = "nn.plan"
	keySampler   = "nn.sampler"
	keyArch      = "nn.architecture"
	keyClasses   = "nn.class_names"
	keyLoss      = "nn.loss"
	keyBudget    = "nn.budget_head"

	paramPrefix     = "params/"
	optimizerPrefix = "optimizer/"
	tensorSampler   = "sampler/state"
	tensorPerm      = "sampler/perm"
)

// positionJSON is where in the plan the run stopped, with the running statistics of an
// unfinished epoch and the last evaluation (null when none ran).
type positionJSON struct {
	Step          int      `json:"step"`
	EpochLoss     *float64 `json:"epoch_loss"` // null when not finite (a diverged run)
	EpochCorrect  int      `json:"epoch_correct"`
	EpochExamples int      `json:"epoch_examples"`
	TestLoss      *float64 `json:"test_loss"`
	TestAccuracy  *float64 `json:"test_accuracy"`
	RunID         string   `json:"run_id,omitempty"`
	Rewinds       [][2]int `json:"rewinds,omitempty"` // [from, to] per rewind, oldest first
}

// file lays c out as named tensors and metadata.
func (c *Training) file() (*tensorfile.File, error) {
	if len(c.Params) != layoutSize(c.Layout) {
		return nil, fmt.Errorf("%w: %d parameters for a layout of %d", ErrInvalid, len(c.Params), layoutSize(c.Layout))
	}
	f := &tensorfile.File{Tensors: map[string]tensorfile.Tensor{}, Metadata: map[string]string{}}
	off := 0
	for _, p := range c.Layout {
		v := c.Params[off : off+p.Size()]
		off += p.Size()
		if c.DType == tensorfile.Float32 {
			f.Tensors[paramPrefix+p.Name] = tensorfile.F32(p.Shape, num.Converted[float32](v))
		} else {
			f.Tensors[paramPrefix+p.Name] = tensorfile.F64(p.Shape, v)
		}
	}
	optimizerTensors(f.Tensors, optimizerPrefix, c.OptimizerState)
	if err := c.averageTensors(f.Tensors); err != nil {
		return nil, err
	}
	if c.SamplerState != nil {
		f.Tensors[tensorSampler] = tensorfile.U8([]int{len(c.SamplerState)}, c.SamplerState)
	}
	if c.Perm != nil {
		f.Tensors[tensorPerm] = tensorfile.I64([]int{len(c.Perm)}, num.Converted[int64](c.Perm))
	}
	pos := positionJSON{
		Step: c.Step, EpochLoss: jsonnum.FiniteOrNil(c.EpochLoss), EpochCorrect: c.EpochCorrect,
		EpochExamples: c.EpochExamples, TestLoss: jsonnum.FiniteOrNil(c.TestLoss),
		TestAccuracy: jsonnum.FiniteOrNil(c.TestAccuracy), RunID: c.RunID,
	}
	for _, r := range c.Rewinds {
		pos.Rewinds = append(pos.Rewinds, [2]int{r.From, r.To})
	}
	layout := c.Layout // stored as ParamInfo's JSON
	if layout == nil {
		layout = []ParamInfo{}
	}
	settings := c.Settings
	if settings == nil {
		settings = map[string]string{}
	}
	for key, v := range map[string]any{keyLayout: layout, keyPlan: c.Plan, keyPosition: pos, keyDataset: c.Dataset, keySettings: settings} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, key, err)
		}
		f.Metadata[key] = string(b)
	}
	if c.Ledger != nil {
		b, err := c.Ledger.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%w: ledger: %v", ErrInvalid, err)
		}
		f.Metadata[keyLedger] = string(b)
	}
	if c.ClassNames != nil {
		if err := c.checkClassNames(); err != nil {
			return nil, err
		}
		b, err := json.Marshal(c.ClassNames)
		if err != nil {
			return nil, fmt.Errorf("%w: class names: %v", ErrInvalid, err)
		}
		f.Metadata[keyClasses] = string(b)
	}
	if c.Architecture != nil {
		b, err := json.Marshal(c.Architecture)
		if err != nil {
			return nil, fmt.Errorf("%w: architecture: %v", ErrInvalid, err)
		}
		f.Metadata[keyArch] = string(b)
	}
	if c.Loss != "" {
		f.Metadata[keyLoss] = c.Loss
	}
	if c.BudgetHead != nil {
		if err := c.BudgetHead.check(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		b, err := json.Marshal(c.BudgetHead)
		if err != nil {
			return nil, fmt.Errorf("%w: budget head: %v", ErrInvalid, err)
		}
		f.Metadata[keyBudget] = string(b)
	}
	f.Metadata[keyKind] = checkpointKind
	f.Metadata[keyModel] = c.Model
	f.Metadata[keyDType] = paramDType(c.DType)
	f.Metadata[keyOptimizer] = c.Optimizer
	f.Metadata[keyNoise] = c.Noise
	f.Metadata[keySampler] = c.Sampler
	if c.Seeded {
		f.Metadata[keySeed] = strconv.FormatUint(c.Seed, 10)
	}
	return f, nil
}

func layoutSize(layout []ParamInfo) int {
	n := 0
	for _, p := range layout {
		n += p.Size()
	}
	return n
}

// fromFile checks a decoded container and turns it into a Training. Everything that can
// be checked without a trainer is checked here, so that a checkpoint that loads is
// internally consistent.
func fromFile(f *tensorfile.File) (*Training, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
	}
	md := f.Metadata
	kind, ok := md[keyKind]
	if !ok {
		return nil, bad("no %q metadata: not a training checkpoint (written by another program?)", keyKind)
	}
	if kind != checkpointKind {
		return nil, bad("kind %q, want %q", kind, checkpointKind)
	}
	known := []string{keyKind, keyModel, keyDType, keyLayout, keyOptimizer, keyLedger, keyPosition, keyNoise, keySeed, keyDataset, keySettings, keyPlan, keySampler, keyArch, tensorfile.MACKey, keyClasses, keyLoss, keyBudget}
	for k := range md {
		if !slices.Contains(known, k) {
			return nil, bad("unknown metadata key %q", k)
		}
	}
	for _, k := range []string{keyModel, keyDType, keyLayout, keyOptimizer, keyPosition, keyNoise, keyDataset, keySettings, keyPlan, keySampler} {
		if _, ok := md[k]; !ok {
			return nil, bad("missing metadata %q", k)
		}
	}
	c := &Training{Model: md[keyModel], Optimizer: md[keyOptimizer], Noise: md[keyNoise], Sampler: md[keySampler], Loss: md[keyLoss]}
	if loss, ok := md[keyLoss]; ok && (loss == "" || len(loss) > maxLossName) {
		return nil, bad("loss %q", loss) // its syntax is package nn's (ModelFromCheckpoint)
	}
	switch md[keyDType] {
	case "float32":
		c.DType = tensorfile.Float32
	case "float64":
		c.DType = tensorfile.Float64
	default:
		return nil, bad("dtype %q", md[keyDType])
	}
	var pos positionJSON
	for _, d := range []struct {
		key string
		dst any
	}{{keyLayout, &c.Layout}, {keyPlan, &c.Plan}, {keyPosition, &pos}, {keyDataset, &c.Dataset}, {keySettings, &c.Settings}} {
		if err := strictJSON(md[d.key], d.dst); err != nil {
			return nil, bad("%s: %v", d.key, err)
		}
	}
	if arch, ok := md[keyArch]; ok {
		c.Architecture = new(Architecture)
		if err := strictJSON(arch, c.Architecture); err != nil {
			return nil, bad("%s: %v", keyArch, err)
		}
		if err := c.Architecture.Check(); err != nil {
			return nil, bad("%s: %v", keyArch, err)
		}
	}
	if err := c.setLayoutAndParams(f.Tensors); err != nil {
		return nil, bad("%v", err)
	}
	if err := c.setPosition(pos); err != nil {
		return nil, bad("position: %v", err)
	}
	if err := c.setPrivacy(md); err != nil {
		return nil, bad("%v", err)
	}
	if err := c.setOptimizerAndSampler(f.Tensors); err != nil {
		return nil, bad("%v", err)
	}
	if err := c.setAverage(f.Tensors); err != nil {
		return nil, bad("%v", err)
	}
	if c.Dataset.Size != c.Plan.DatasetSize {
		return nil, bad("data set of %d examples, plan for %d", c.Dataset.Size, c.Plan.DatasetSize)
	}
	if cs := c.Dataset.Content; cs != "" && !isSHA256Hex(cs) {
		return nil, bad("data set content_sha256 %q is not a hex SHA-256", cs)
	}
	if names, ok := md[keyClasses]; ok {
		if err := strictJSON(names, &c.ClassNames); err != nil {
			return nil, bad("%s: %v", keyClasses, err)
		}
		if err := c.checkClassNames(); err != nil {
			return nil, err
		}
	}
	if head, ok := md[keyBudget]; ok {
		c.BudgetHead = new(BudgetHead)
		if err := strictJSON(head, c.BudgetHead); err != nil {
			return nil, bad("%s: %v", keyBudget, err)
		}
		if err := c.BudgetHead.check(); err != nil {
			return nil, bad("%s: %v", keyBudget, err)
		}
	}
	if len(c.Settings) == 0 {
		c.Settings = nil
	}
	return c, nil
}

// check reports a budget head that is not well formed.
func (h *BudgetHead) check() error {
	if !isSHA256Hex(h.Fingerprint) || !isSHA256Hex(h.Ledger) || !isSHA256Hex(h.Hash) || h.Seq < 0 {
		return errors.New("budget head: want a fingerprint, ledger and hash of 64 lowercase hex digits and a seq ≥ 0")
	}
	return nil
}

// isSHA256Hex reports whether s is a SHA-256 in lower-case hex, as
// datasets.ContentFingerprint writes it.
func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// paramDType names the parameters' element type as the "nn.dtype" metadata stores it
// (nn.DType's names).
func paramDType(d tensorfile.DType) string {
	switch d {
	case tensorfile.Float32:
		return "float32"
	case tensorfile.Float64:
		return "float64"
	}
	return d.String()
}

// strictJSON decodes one JSON value with no unknown fields and nothing after it.
func strictJSON(s string, dst any) error { return strictjson.Unmarshal([]byte(s), dst) }

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// maxLossName bounds the "nn.loss" entry ("focal:" and a float64).
const maxLossName = 64

// maxParams bounds the parameter count a checkpoint may declare (the container's own size
// limit bounds the data; this keeps the layout arithmetic far from overflow).
const maxParams = 1 << 40

func (c *Training) setLayoutAndParams(tensors map[string]tensorfile.Tensor) error {
	if len(c.Layout) == 0 {
		return errors.New("empty parameter layout")
	}
	total := 0
	seen := map[string]bool{}
	for _, p := range c.Layout {
		if p.Name == "" || seen[p.Name] {
			return fmt.Errorf("parameter name %q empty or repeated", p.Name)
		}
		seen[p.Name] = true
		size := 1
		for _, s := range p.Shape {
			if s < 1 || s > maxParams || size > maxParams/s {
				return fmt.Errorf("parameter %s: shape %v", p.Name, p.Shape)
			}
			size *= s
		}
		if total += size; total > maxParams {
			return fmt.Errorf("layout of more than %d parameters", maxParams)
		}
	}
	for name := range tensors {
		if p, ok := strings.CutPrefix(name, paramPrefix); ok && !seen[p] {
			return fmt.Errorf("tensor %q is not in the layout", name)
		}
	}
	for _, p := range c.Layout {
		t, ok := tensors[paramPrefix+p.Name]
		if !ok {
			return fmt.Errorf("missing parameter tensor %q", paramPrefix+p.Name)
		}
		if !slices.Equal(t.Shape, p.Shape) {
			return fmt.Errorf("parameter %s has shape %v, layout says %v", p.Name, t.Shape, p.Shape)
		}
	}
	// Every tensor exists with its layout shape, so the container has checked that the
	// data is there: total is backed by bytes read, not just declared.
	params := make([]float64, 0, total)
	for _, p := range c.Layout {
		t := tensors[paramPrefix+p.Name]
		var v []float64
		switch {
		case c.DType == tensorfile.Float32 && t.DType == tensorfile.Float32:
			v32, err := t.Float32s()
			if err != nil {
				return fmt.Errorf("parameter %s: %v", p.Name, err)
			}
			v = num.Converted[float64](v32)
		case c.DType == tensorfile.Float64 && t.DType == tensorfile.Float64:
			var err error
			if v, err = t.Float64s(); err != nil {
				return fmt.Errorf("parameter %s: %v", p.Name, err)
			}
		default:
			return fmt.Errorf("parameter %s stored as %v in a %v checkpoint", p.Name, t.DType, paramDType(c.DType))
		}
		for i, x := range v {
			if !finite(x) {
				return fmt.Errorf("parameter %s[%d] = %v", p.Name, i, x)
			}
		}
		params = append(params, v...)
	}
	c.Params = params
	return nil
}

func (c *Training) setPosition(p positionJSON) error {
	spe := c.Plan.StepsPerEpoch
	switch {
	case p.Step < 0 || p.Step > c.Plan.Steps:
		return fmt.Errorf("step %d of a %d-step plan", p.Step, c.Plan.Steps)
	case p.EpochExamples < 0 || p.EpochCorrect < 0 || p.EpochCorrect > p.EpochExamples:
		return fmt.Errorf("epoch statistics %d correct of %d", p.EpochCorrect, p.EpochExamples)
	case p.EpochLoss != nil && (!(*p.EpochLoss >= 0) || !finite(*p.EpochLoss)):
		return fmt.Errorf("epoch loss %v", *p.EpochLoss)
	case p.Step%spe == 0 && (p.EpochExamples != 0 || p.EpochLoss == nil || *p.EpochLoss != 0):
		return errors.New("running statistics at an epoch boundary")
	case p.EpochExamples > p.Step%spe*c.Plan.DatasetSize:
		return fmt.Errorf("%d examples in %d steps of the epoch", p.EpochExamples, p.Step%spe)
	case p.RunID != "" && !IsRunID(p.RunID):
		return fmt.Errorf("run id %q, want 32 hexadecimal digits", p.RunID)
	}
	for _, r := range p.Rewinds {
		c.Rewinds = append(c.Rewinds, Rewind{From: r[0], To: r[1]})
	}
	if err := CheckRewinds(c.Rewinds, p.Step, c.Plan.Steps); err != nil {
		return err
	}
	c.RunID = p.RunID
	c.Step, c.Epoch = p.Step, p.Step/spe
	c.EpochLoss, c.EpochCorrect, c.EpochExamples = math.NaN(), p.EpochCorrect, p.EpochExamples
	if p.EpochLoss != nil {
		c.EpochLoss = *p.EpochLoss
	}
	c.TestLoss, c.TestAccuracy = math.NaN(), math.NaN()
	if p.TestLoss != nil {
		c.TestLoss = *p.TestLoss
	}
	if p.TestAccuracy != nil {
		c.TestAccuracy = *p.TestAccuracy
	}
	return nil
}

func (c *Training) setPrivacy(md map[string]string) error {
	if s, ok := md[keySeed]; ok {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("seed %q", s)
		}
		c.Seed, c.Seeded = seed, true
	}
	ledger, hasLedger := md[keyLedger]
	if !c.Plan.Private {
		if hasLedger || c.Noise != "none" {
			return fmt.Errorf("a ledger or noise %q for non-private training", c.Noise)
		}
		return nil
	}
	if !hasLedger {
		return errors.New("private training without a ledger")
	}
	// The noise description and the run's seed are checked against the generator itself
	// in setOptimizerAndSampler.
	c.Ledger = accountant.NewLedger()
	if err := c.Ledger.UnmarshalJSON([]byte(ledger)); err != nil {
		return fmt.Errorf("ledger: %v", err)
	}
	if c.Ledger.Steps() != c.LineageSteps() {
		return fmt.Errorf("ledger of %d steps at step %d (%d steps taken)", c.Ledger.Steps(), c.Step, c.LineageSteps())
	}
	for _, s := range c.Ledger.History() {
		if s.Q != c.Plan.SampleRate {
			return fmt.Errorf("ledger records q = %v, plan has q = %v", s.Q, c.Plan.SampleRate)
		}
	}
	// Every step must carry the plan's z. A rule's noise schedule (ADP-SGD) is known only
	// to a trainer: Restore checks those ledgers step by step.
	if !c.Plan.NoiseSchedule {
		if err := VerifyLedger(c.Ledger, c.Plan, c.Rewinds, c.Step, nil); err != nil {
			return err
		}
	}
	return nil
}

func (c *Training) setOptimizerAndSampler(tensors map[string]tensorfile.Tensor) error {
	for name, t := range tensors {
		switch {
		case strings.HasPrefix(name, paramPrefix), strings.HasPrefix(name, optimizerPrefix), strings.HasPrefix(name, emaPrefix):
		case name == tensorSampler:
			if t.DType != tensorfile.Uint8 || len(t.Shape) != 1 {
				return fmt.Errorf("sampler state: %v of shape %v, want a U8 vector", t.DType, t.Shape)
			}
			c.SamplerState, _ = t.Uint8s()
		case name == tensorPerm:
			if t.DType != tensorfile.Int64 || len(t.Shape) != 1 {
				return fmt.Errorf("sampler permutation: %v of shape %v, want an I64 vector", t.DType, t.Shape)
			}
			v, err := t.Int64s()
			if err != nil {
				return fmt.Errorf("sampler permutation: %v", err)
			}
			for _, x := range v {
				if x < 0 || x > math.MaxInt32 {
					return fmt.Errorf("sampler permutation entry %d", x)
				}
			}
			c.Perm = num.Converted[int](v)
		default:
			return fmt.Errorf("unknown tensor %q", name)
		}
	}
	if c.Optimizer == "" {
		return errors.New("no optimizer name")
	}
	var err error
	if c.OptimizerState, err = optimizerState(tensors, optimizerPrefix, 1); err != nil {
		return err
	}
	if hasPrivate := c.OptimizerState.Noise != nil || c.OptimizerState.Rule != nil; hasPrivate != c.Plan.Private {
		return fmt.Errorf("optimizer state with%s a noise generator and rule state for %s training",
			map[bool]string{true: "", false: "out"}[hasPrivate], map[bool]string{true: "private", false: "non-private"}[c.Plan.Private])
	}
	if c.Plan.Private {
		// A private optimizer counts its steps, and its noise schedule (ADP-SGD) depends on
		// the count, which must be the ledger's and the plan's.
		if c.OptimizerState.Rule == nil {
			return errors.New("private optimizer state without its rule's state")
		}
		if c.OptimizerState.Step != c.Step {
			return fmt.Errorf("optimizer at step %d, checkpoint at step %d", c.OptimizerState.Step, c.Step)
		}
		if err := c.checkNoise(); err != nil {
			return err
		}
	}
	switch c.Sampler {
	case SamplerSeeded:
		if !c.Seeded || c.SamplerState == nil {
			return errors.New("a seeded sampler without a seed or state")
		}
	case SamplerSecure:
		if c.Seeded || c.SamplerState != nil {
			return errors.New("a secure sampler with a seed or state")
		}
	default:
		return fmt.Errorf("sampler %q", c.Sampler)
	}
	midEpoch := c.Step%c.Plan.StepsPerEpoch != 0
	if c.Perm != nil {
		if c.Plan.Sampling != Shuffle || !midEpoch {
			return errors.New("a sampler permutation outside a shuffled epoch")
		}
		if err := CheckPerm(c.Perm, c.Plan.DatasetSize); err != nil {
			return fmt.Errorf("sampler: %v", err)
		}
	} else if c.Plan.Sampling == Shuffle && midEpoch {
		return errors.New("a shuffled epoch in progress without its permutation")
	}
	return nil
}

// checkNoise checks the private optimizer's noise generator against the run's seed and
// the checkpoint's noise description, through the generator's own typed answer.
func (c *Training) checkNoise() error {
	if c.OptimizerState.Noise == nil {
		return errors.New("private optimizer state without a noise generator")
	}
	var noise dpoptim.Noise
	if err := noise.UnmarshalBinary(c.OptimizerState.Noise); err != nil {
		return err
	}
	seed, seeded := noise.Seed()
	switch {
	case seeded != c.Seeded || seeded && seed != c.Seed:
		return fmt.Errorf("noise generator %v in a run with seed %v (%v)", noise.String(), c.Seed, c.Seeded)
	case c.Noise != noise.String():
		return fmt.Errorf("noise %q, the generator is %v", c.Noise, noise.String())
	}
	return nil
}

// Tensor names inside an optimizer's part (optimizerPrefix): the names of a dpoptim.State.
const (
	stateStep  = "step"  // F64 [1], a non-negative integer
	stateNoise = "noise" // U8 (F64, one byte per element, in files written before State)
	stateRule  = "rule/" // prefix of the nested rule's State
)

// optimizerTensors lays s out under prefix: the step as a F64 vector of length 1, the
// noise generator's bytes as U8, each vector as a F64 vector, each scalar as a rank-0 F64
// tensor, and the nested rule's state under prefix+"rule/". Vector and scalar names must
// not be "step", "noise" or start with "rule/" (no dpoptim rule uses them).
func optimizerTensors(dst map[string]tensorfile.Tensor, prefix string, s dpoptim.State) {
	dst[prefix+stateStep] = tensorfile.F64([]int{1}, []float64{float64(s.Step)})
	if s.Noise != nil {
		dst[prefix+stateNoise] = tensorfile.U8([]int{len(s.Noise)}, s.Noise)
	}
	for k, v := range s.Vectors {
		dst[prefix+k] = tensorfile.F64([]int{len(v)}, v)
	}
	for k, v := range s.Scalars {
		dst[prefix+k] = tensorfile.F64(nil, []float64{v})
	}
	if s.Rule != nil {
		optimizerTensors(dst, prefix+stateRule, *s.Rule)
	}
}

// optimizerState reads the dpoptim.State that optimizerTensors laid out under prefix, with
// at most nest levels of nested rule state (1: a Private step around a rule). It
// also reads the layout of files written before State, which stored the noise generator
// as one float64 per byte and a rule's scalars as vectors of length 1 (dpoptim's rules
// accept those where they had scalars).
func optimizerState(tensors map[string]tensorfile.Tensor, prefix string, nest int) (dpoptim.State, error) {
	var s dpoptim.State
	hasRule := false
	for name, t := range tensors {
		key, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if strings.HasPrefix(key, stateRule) {
			hasRule = true
			continue
		}
		switch key {
		case stateStep:
			v, err := t.Float64s()
			if err != nil || len(t.Shape) != 1 || len(v) != 1 {
				return s, fmt.Errorf("optimizer state %q: %v of shape %v, want a F64 vector of length 1", name, t.DType, t.Shape)
			}
			if !(v[0] >= 0) || v[0] != math.Trunc(v[0]) || v[0] > math.MaxInt32 {
				return s, fmt.Errorf("optimizer state %s = %v, want a step count", name, v[0])
			}
			s.Step = int(v[0])
		case stateNoise:
			b, err := noiseBytes(t)
			if err != nil {
				return s, fmt.Errorf("optimizer state %q: %v", name, err)
			}
			s.Noise = b
		default:
			if t.DType != tensorfile.Float64 || len(t.Shape) > 1 {
				return s, fmt.Errorf("optimizer state %q: %v of shape %v, want a F64 vector or scalar", name, t.DType, t.Shape)
			}
			v, err := t.Float64s()
			if err != nil {
				return s, fmt.Errorf("optimizer state %q: %v", name, err)
			}
			for i, x := range v {
				if !finite(x) {
					return s, fmt.Errorf("optimizer state %s[%d] = %v", name, i, x)
				}
			}
			if len(t.Shape) == 0 {
				if s.Scalars == nil {
					s.Scalars = map[string]float64{}
				}
				s.Scalars[key] = v[0]
			} else {
				if s.Vectors == nil {
					s.Vectors = map[string][]float64{}
				}
				s.Vectors[key] = v
			}
		}
	}
	if _, ok := tensors[prefix+stateStep]; !ok {
		return s, fmt.Errorf("missing optimizer state %q", prefix+stateStep)
	}
	if hasRule {
		if nest < 1 {
			return s, fmt.Errorf("optimizer state nested deeper than a private step around a rule (%q…)", prefix+stateRule)
		}
		rule, err := optimizerState(tensors, prefix+stateRule, nest-1)
		if err != nil {
			return s, err
		}
		s.Rule = &rule
	}
	return s, nil
}

// noiseBytes reads a serialised noise generator: U8, or F64 with one byte per element as
// files written before dpoptim.State stored it.
func noiseBytes(t tensorfile.Tensor) ([]byte, error) {
	if len(t.Shape) != 1 {
		return nil, fmt.Errorf("shape %v, want a vector", t.Shape)
	}
	if t.DType == tensorfile.Uint8 {
		return t.Uint8s()
	}
	v, err := t.Float64s()
	if err != nil {
		return nil, fmt.Errorf("%v, want U8 (or F64 bytes)", err)
	}
	for _, x := range v {
		if !(x >= 0 && x <= 255 && x == math.Trunc(x)) {
			return nil, fmt.Errorf("holds %v, want bytes", x)
		}
	}
	return num.Converted[byte](v), nil
}

// number is what convertSlice converts between.

// checkClassNames checks ClassNames against the data set the checkpoint was trained on:
// one name per class, each as datasets.CheckClassNames accepts (a name is printed by
// evaluate and predict, so a hostile file must not get a line break or an escape
// sequence into their output).
func (c *Training) checkClassNames() error {
	if len(c.ClassNames) != c.Dataset.Classes {
		return fmt.Errorf("%w: %s: %d class names for %d classes", ErrInvalid, keyClasses, len(c.ClassNames), c.Dataset.Classes)
	}
	if err := datasets.CheckClassNames(c.ClassNames); err != nil {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, keyClasses, strings.TrimPrefix(err.Error(), "datasets: "))
	}
	return nil
}
