package traincmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/nn/checkpoint"
)

// tinySearch is a search that trains logistic regression for one epoch per trial on
// the embedded MNIST sample (7,200 training and 800 validation examples).
var tinySearch = []string{"-model", "logreg", "-epochs", "1", "-seed", "5", "-json"}

func decodeTune(t *testing.T, out string) tuneSummary {
	t.Helper()
	var s tuneSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("-json output %q: %v", out, err)
	}
	return s
}

// searchEpsilon is the ε of a search on n training examples: every trial takes
// ⌈n/batch⌉·epochs steps at q = batch/n with noise z, and the score's Gaussian mechanism
// adds α/(2σ²); the most over the plans, then accountant.TuningEpsilon.
func searchEpsilon(t *testing.T, n int, d accountant.Trials, plans [][2]int, z, scoreNoise, delta float64) (search, trial float64) {
	t.Helper()
	orders := accountant.OrdersUpTo(256)
	curve := make([]float64, len(orders))
	for _, p := range plans {
		batch, epochs := p[0], p[1]
		steps := (n + batch - 1) / batch * epochs
		r, err := accountant.SampledGaussianRDP(float64(batch)/float64(n), z, orders)
		if err != nil {
			t.Fatal(err)
		}
		for i := range curve {
			curve[i] = math.Max(curve[i], float64(steps)*r[i])
		}
	}
	for i, a := range orders {
		curve[i] += a / (2 * scoreNoise * scoreNoise)
	}
	s, err := accountant.TuningEpsilon(d, orders, curve, delta, accountant.Balle)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := accountant.EpsilonFromRDP(orders, curve, delta, accountant.Balle)
	if err != nil {
		t.Fatal(err)
	}
	return s.Epsilon, tr.Epsilon
}

// TestTuneSearch: a tiny search with a fixed noise multiplier reports the ε that
// accountant.TuningEpsilon gives for its plan, picks values from the spec, writes the
// best trial's checkpoint, whose ledger holds that one trial (⌈n/512⌉ steps at
// q = 512/n, z = 2, n the 8,000 embedded examples less the validation part), and a
// seeded search run twice prints the same.
func TestTuneSearch(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "best.ckpt")
	args := append(slices.Clone(tinySearch), "-batch", "512", "-noise", "2", "-checkpoint", ckpt,
		"-tune", "lr=1,2,4;clip=0.5,1;trials=geometric:mean=2;score-noise=20")
	code, out, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := decodeTune(t, out)
	d, _ := accountant.GeometricTrials(2)
	n := 8000 - s.ValidationN
	if math.Abs(float64(s.ValidationN)-800) > 4*math.Sqrt(8000*0.1*0.9) {
		t.Errorf("%d validation examples; want about 800 (-validation 0.1 by default)", s.ValidationN)
	}
	wantSearch, wantTrial := searchEpsilon(t, n, d, [][2]int{{512, 1}}, 2, 20, 1e-5)
	if math.Abs(s.Epsilon-wantSearch) > 1e-12*wantSearch || math.Abs(s.TrialEpsilon-wantTrial) > 1e-12*wantTrial {
		t.Errorf("ε: search %v, trial %v; want %v and %v", s.Epsilon, s.TrialEpsilon, wantSearch, wantTrial)
	}
	if !(s.Epsilon > s.TrialEpsilon) {
		t.Errorf("the search's ε %v is not above one trial's %v", s.Epsilon, s.TrialEpsilon)
	}
	if !strings.Contains(stderr, "Papernot & Steinke") || strings.Count(stderr, "tune: trial ") != s.Trials {
		t.Errorf("stderr does not show the plan and %d trial lines:\n%s", s.Trials, stderr)
	}
	if !slices.Contains([]string{"1", "2", "4"}, s.Best["lr"]) || !slices.Contains([]string{"0.5", "1"}, s.Best["clip"]) || s.BestTrial < 1 || s.BestTrial > s.Trials {
		t.Errorf("best %v (trial %d of %d): not from the spec", s.Best, s.BestTrial, s.Trials)
	}
	if !(s.Score > 0.3 && s.Score < 1.1) {
		t.Errorf("score %v on %d validation examples", s.Score, s.ValidationN)
	}
	c, err := checkpoint.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Ledger.History()
	if len(h) != 1 || h[0].Steps != (n+511)/512 || h[0].Z != 2 || math.Abs(h[0].Q-512/float64(n)) > 1e-15 {
		t.Errorf("checkpoint ledger %+v: want one trial, %d steps at q = 512/%d, z = 2", h, (n+511)/512, n)
	}
	if c.Settings[settingValidationSplit] != "content-hash" || c.Settings[settingTuneTrial] == "" {
		t.Errorf("checkpoint settings %v: no mark of the search's split or of its trial", c.Settings)
	}
	// The trial's ledger counts its own steps, not the search's: resuming the best trial
	// as a plain run is refused.
	if code, _, stderr := runCmd(t, context.Background(), "-resume", ckpt, "-epochs", "2"); code != exit.Usage {
		t.Errorf("resuming the best trial: exit %d, want 2\n%s", code, stderr)
	}
	if c.Settings["lr"] != s.Best["lr"] || c.Settings["clip"] != s.Best["clip"] {
		t.Errorf("checkpoint settings lr=%s clip=%s, best %v", c.Settings["lr"], c.Settings["clip"], s.Best)
	}
	spent, err := c.Ledger.Epsilon(1e-5)
	if err != nil || math.Abs(spent.Epsilon-s.CheckpointEpsilon) > 1e-12 || !(spent.Epsilon < s.TrialEpsilon) {
		t.Errorf("checkpoint ε %v (err %v), reported %v, trial with score %v", spent.Epsilon, err, s.CheckpointEpsilon, s.TrialEpsilon)
	}

	// The same seed: the same trials, the same scores, the same best.
	// (-overwrite: the first search's checkpoint is another run's, which train refuses
	// to replace silently.)
	code2, out2, stderr2 := runCmd(t, context.Background(), append(args, "-overwrite")...)
	if code2 != exit.OK {
		t.Fatalf("second run: exit %d\n%s", code2, stderr2)
	}
	s2 := decodeTune(t, out2)
	s.Seconds, s2.Seconds = 0, 0
	if trialLines(stderr) != trialLines(stderr2) || !sameSummary(s, s2) {
		t.Errorf("a seeded search is not reproducible:\n%s\n%s\n%+v\n%+v", trialLines(stderr), trialLines(stderr2), s, s2)
	}
}

func trialLines(stderr string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "tune: trial ") || strings.HasPrefix(l, "tune: ") && strings.Contains(l, " drawn") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func sameSummary(a, b tuneSummary) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestTuneCalibrated: with -epsilon, the noise multiplier is calibrated so that the whole
// search, over batch sizes 256 and 512 (the trial's RDP the larger of the two plans'),
// meets it; recomputing the search's ε at the reported z gives the reported ε. Poisson
// trials: the seed is one whose draw is not zero.
func TestTuneCalibrated(t *testing.T) {
	args := append(slices.Clone(tinySearch), "-epsilon", "4", "-no-checkpoint",
		"-tune", "batch=256,512;lr=2;trials=poisson:mean=3")
	code, out, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := decodeTune(t, out)
	d, _ := accountant.PoissonTrials(3)
	n := 8000 - s.ValidationN
	want, _ := searchEpsilon(t, n, d, [][2]int{{256, 1}, {512, 1}}, s.NoiseMultiplier, defaultScoreNoise, 1e-5)
	if !(s.Epsilon <= 4) || s.Epsilon < 3.99 || math.Abs(s.Epsilon-want) > 1e-12*want {
		t.Errorf("search ε %v at z = %v; want ≤ 4, within 0.25 %% of it, and %v recomputed", s.Epsilon, s.NoiseMultiplier, want)
	}
	// At 0.99·z the search must miss the target: z is the least that meets it.
	if lower, _ := searchEpsilon(t, n, d, [][2]int{{256, 1}, {512, 1}}, 0.99*s.NoiseMultiplier, defaultScoreNoise, 1e-5); lower <= 4 {
		t.Errorf("z = %v is not the least noise for ε = 4: 0.99·z gives %v", s.NoiseMultiplier, lower)
	}
}

// TestTuneSpend: the spend handed to the budget store is the search's curve, whose ε at
// its δ is the one printed.
func TestTuneSpend(t *testing.T) {
	o := &options{}
	fs := newFlagSet(o)
	args := append(slices.Clone(tinySearch), "-batch", "512", "-noise", "3", "-no-checkpoint", "-tune", "lr=1,2;trials=negbin:eta=0.5,gamma=0.2")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	s, err := prepareTune(o, args)
	if err != nil {
		t.Fatal(err)
	}
	sp := s.Spend()
	d, _ := accountant.NegativeBinomialTrials(0.5, 0.2)
	want, _ := searchEpsilon(t, s.trainSet.Len(), d, [][2]int{{512, 1}}, 3, defaultScoreNoise, 1e-5)
	got, err := accountant.EpsilonFromRDP(sp.Orders, sp.RDP, sp.Delta, accountant.Balle)
	if err != nil || math.Abs(got.Epsilon-want) > 1e-12*want || sp.Delta != 1e-5 || !strings.Contains(sp.Description, "truncated negative binomial") {
		t.Errorf("spend %+v: ε %v (err %v), want %v", sp, got.Epsilon, err, want)
	}
}

// TestTuneRefuses: bad specs and flags that do not go with -tune exit 2 before any
// training, naming the problem.
func TestTuneRefuses(t *testing.T) {
	base := []string{"-model", "logreg", "-epochs", "1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tune", "lr=1,2;trials=geometric:mean=4"}, "-tune without -checkpoint FILE"},
		{[]string{"-no-checkpoint"}, "-no-checkpoint applies to a -tune search without -checkpoint"},
		{[]string{"-no-checkpoint", "-checkpoint", "m.ckpt", "-tune", "lr=1;trials=geometric:mean=4"}, "-no-checkpoint applies"},
		{[]string{"-tune", "lr=1,2"}, "no trials="},
		{[]string{"-tune", "trials=geometric:mean=4"}, "no values to search"},
		{[]string{"-tune", "lr=1;trials=geometric:mean=1"}, "mean"},
		{[]string{"-tune", "lr=1;trials=geometric"}, "geometric takes"},
		{[]string{"-tune", "lr=1;trials=poisson:mean=0.5"}, "μ = 0.5"},
		{[]string{"-tune", "lr=1;trials=negbin:eta=-1,gamma=0.1"}, "η = -1"},
		{[]string{"-tune", "lr=1;trials=negbin:eta=1"}, "negbin takes"},
		{[]string{"-tune", "lr=1;trials=logarithmic:gamma=1"}, "γ = 1"},
		{[]string{"-tune", "lr=1;trials=uniform:4"}, "unknown distribution"},
		{[]string{"-tune", "lr=1;trials=geometric:mean=x"}, "not a number"},
		{[]string{"-tune", "lr=1,1;trials=geometric:mean=4"}, "twice"},
		{[]string{"-tune", "lr=1;lr=2;trials=geometric:mean=4"}, "twice"},
		{[]string{"-tune", "lr=;trials=geometric:mean=4"}, "empty value"},
		{[]string{"-tune", "seed=1,2;trials=geometric:mean=4"}, "unknown key"},
		{[]string{"-tune", "lr;trials=geometric:mean=4"}, "not KEY=VALUES"},
		{[]string{"-tune", "lr=fast;trials=geometric:mean=4"}, "lr=fast"},
		{[]string{"-tune", "lr=-1;trials=geometric:mean=4"}, "-lr"},
		{[]string{"-tune", "batch=0;trials=geometric:mean=4"}, "-batch"},
		{[]string{"-tune", "batch=100000;trials=geometric:mean=4"}, "larger than the training set"},
		{[]string{"-tune", "optimizer=sgd;trials=geometric:mean=4"}, "sgd"},
		{[]string{"-tune", "loss=cross-entropy,focal:-1;trials=geometric:mean=4"}, "focal:-1"},
		{[]string{"-tune", "lr=1;score-noise=0;trials=geometric:mean=4"}, "score-noise"},
		{[]string{"-tune", "lr=1;trials=geometric:mean=4;score-noise=0.5", "-epsilon", "1"}, "scores alone"},
		{[]string{"-tune", "noise=0.3;trials=geometric:mean=4", "-epsilon", "1"}, "above -epsilon 1"},
		{[]string{"-lr", "1", "-tune", "lr=1,2;trials=geometric:mean=4"}, "one place"},
		{[]string{"-epsilon", "-1", "-tune", "lr=1;trials=geometric:mean=4"}, "-epsilon -1"},
		{[]string{"-noise", "0", "-tune", "lr=1;trials=geometric:mean=4"}, "-noise 0"},
		{[]string{"-resume", "x.ckpt", "-tune", "lr=1;trials=geometric:mean=4"}, "-resume"},
		{[]string{"-metrics", "m.jsonl", "-tune", "lr=1;trials=geometric:mean=4"}, "-metrics"},
		{[]string{"-accountant", "pld", "-tune", "lr=1;trials=geometric:mean=4"}, "pld"},
		{[]string{"-validation", "0", "-tune", "lr=1;trials=geometric:mean=4"}, "-validation 0"},
	} {
		args := append(slices.Clone(base), c.args...)
		if !strings.Contains(c.want, "checkpoint") {
			args = append(args, "-no-checkpoint")
		}
		code, _, stderr := runCmd(t, context.Background(), args...)
		if code != exit.Usage || !strings.Contains(stderr, c.want) {
			t.Errorf("train %s: exit %d, stderr %q; want exit 2 naming %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
		if strings.Contains(stderr, "tune: trial") {
			t.Errorf("train %s: a trial ran before the refusal", strings.Join(c.args, " "))
		}
	}
}

func TestParseTrials(t *testing.T) {
	for _, c := range []struct {
		in   string
		want accountant.Trials
	}{
		{"geometric:mean=8", accountant.Trials{Dist: accountant.NegativeBinomial, Eta: 1, Gamma: 0.125}},
		{"geometric:8", accountant.Trials{Dist: accountant.NegativeBinomial, Eta: 1, Gamma: 0.125}},
		{"geometric:gamma=0.2", accountant.Trials{Dist: accountant.NegativeBinomial, Eta: 1, Gamma: 0.2}},
		{"logarithmic:gamma=0.05", accountant.Trials{Dist: accountant.NegativeBinomial, Eta: 0, Gamma: 0.05}},
		{"negbin:eta=0.5,gamma=0.05", accountant.Trials{Dist: accountant.NegativeBinomial, Eta: 0.5, Gamma: 0.05}},
		{"negbin: gamma=0.1 , eta=-0.5", accountant.Trials{Dist: accountant.NegativeBinomial, Eta: -0.5, Gamma: 0.1}},
		{"poisson:8", accountant.Trials{Dist: accountant.Poisson, Mu: 8}},
		{"Poisson:mean=2.5", accountant.Trials{Dist: accountant.Poisson, Mu: 2.5}},
	} {
		got, err := parseTrials(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseTrials(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// FuzzParseTuneSpec: the parser never panics, and what it accepts is a search: values
// for at least one key, a valid distribution, a positive score noise, a bounded number
// of combinations.
func FuzzParseTuneSpec(f *testing.F) {
	for _, s := range []string{
		"lr=0.5,1,2;clip=0.5,1;trials=geometric:mean=8",
		"lr=1;trials=poisson:8;score-noise=5",
		"batch=256,512;epochs=1,2;trials=negbin:eta=0.5,gamma=0.05",
		"lr=1;trials=logarithmic:gamma=0.1;",
		";;lr = 1 , 2 ; trials = geometric:gamma=0.3",
		"lr=1;trials=negbin:eta=-0.99,gamma=0.999",
		"trials=poisson:mean=1e4;lr=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := parseTuneSpec(spec)
		if err != nil {
			if !exit.IsUsage(err) {
				t.Fatalf("%q: error %v is not a usage error", spec, err)
			}
			return
		}
		if len(s.params) == 0 || s.trials.Check() != nil || !(s.scoreNoise > 0) || math.IsInf(s.scoreNoise, 0) {
			t.Fatalf("%q: accepted %+v", spec, s)
		}
		n := 1
		for _, p := range s.params {
			if len(p.values) == 0 || !slices.Contains(tuneKeys, p.name) {
				t.Fatalf("%q: param %+v", spec, p)
			}
			n *= len(p.values)
		}
		if n > maxTuneConfigs || len(s.configs()) != n {
			t.Fatalf("%q: %d combinations", spec, n)
		}
		_ = s.trials.Draw(0.999999) // terminates
	})
}

// TestTuneInterrupted: a search stopped before its first trial ends with exit 130, writes
// no checkpoint and says that nothing was released.
func TestTuneInterrupted(t *testing.T) {
	ckpt := filepath.Join(t.TempDir(), "best.ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, stderr := runCmd(t, ctx, append(slices.Clone(tinySearch), "-checkpoint", ckpt, "-tune", "lr=1,2;trials=geometric:mean=2")...)
	if code != exit.Interrupted || !strings.Contains(stderr, "nothing released") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(ckpt); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("checkpoint written by an interrupted search: %v", err)
	}
}

// TestTuneDiverged: a trial whose parameters overflow scores −∞ and is never the best;
// when every trial diverges, nothing is released (exit 1).
func TestTuneDiverged(t *testing.T) {
	args := []string{"-model", "logreg", "-epochs", "1", "-seed", "3", "-noise", "3", "-json", "-no-checkpoint"}
	code, out, stderr := runCmd(t, context.Background(), append(slices.Clone(args), "-tune", "lr=1,1e38;clip=1e30;trials=geometric:3")...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "lr=1e38 clip=1e30: training diverged") {
		t.Fatalf("no diverged trial with seed 3 (the test needs one):\n%s", stderr)
	}
	if s := decodeTune(t, out); s.Best["lr"] != "1" {
		t.Errorf("best %v: a diverged trial was chosen", s.Best)
	}
	code, _, stderr = runCmd(t, context.Background(), append(slices.Clone(args), "-tune", "lr=1e38;clip=1e30;trials=geometric:2")...)
	if code != exit.Failure || !strings.Contains(stderr, "diverged: nothing released") {
		t.Errorf("every trial diverged: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestTuneSplit: the search's split holds out about the fraction asked (binomially), the
// same seed gives the same split, and removing one example moves no other example
// between the parts (where -validation's stratified split moves hundreds).
func TestTuneSplit(t *testing.T) {
	all, _, err := mnist.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	parts := func(ds datasets.Dataset, seed uint64) (train, val map[[32]byte]int) {
		tr, va, err := tuneSplit(ds, 0.1, seed)
		if err != nil {
			t.Fatal(err)
		}
		return exampleHashes(t, tr), exampleHashes(t, va)
	}
	train, val := parts(all, 1)
	nVal := 0
	for _, c := range val {
		nVal += c
	}
	if math.Abs(float64(nVal)-800) > 4*math.Sqrt(8000*0.1*0.9) {
		t.Errorf("%d of 8,000 held out at fraction 0.1", nVal)
	}
	for h := range val {
		if train[h] > 0 {
			t.Errorf("an example is in both parts") // identical examples go to one part
		}
	}
	_, val2 := parts(all, 2)
	same := 0
	for h := range val {
		if val2[h] > 0 {
			same++
		}
	}
	if same > nVal/2 {
		t.Errorf("split seeds 1 and 2 share %d of %d held-out examples", same, nVal)
	}
	for _, drop := range []int{0, 4321, 7999} {
		idx := make([]int, 0, all.Len()-1)
		for i := range all.Len() {
			if i != drop {
				idx = append(idx, i)
			}
		}
		smaller, err := datasets.Subset(all, idx)
		if err != nil {
			t.Fatal(err)
		}
		trainS, valS := parts(smaller, 1)
		moved := 0
		for h, c := range valS {
			moved += max(c-val[h], 0)
		}
		for h, c := range trainS {
			moved += max(c-train[h], 0)
		}
		lost := 0
		for h, c := range val {
			lost += max(c-valS[h], 0)
		}
		for h, c := range train {
			lost += max(c-trainS[h], 0)
		}
		if moved != 0 || lost != 1 {
			t.Errorf("removing example %d: %d examples changed part, %d lost (want 0 and 1)", drop, moved, lost)
		}
	}
}

// TestTunePlanAgreesWithTrials: the header's bound on a trial's training ε is the ε each
// trial's line prints (one plan: equal to the printed digits), the bound with the score
// is larger by the score's share, the expected number of trials is announced before the
// first, and each trial but the last is followed by the time to go.
func TestTunePlanAgreesWithTrials(t *testing.T) {
	args := append(slices.Clone(tinySearch), "-batch", "512", "-noise", "2", "-no-checkpoint",
		"-tune", "lr=1,2;trials=geometric:mean=3;score-noise=20")
	code, _, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var bound, withScore float64
	if _, err := fmt.Sscanf(stderr[strings.Index(stderr, "each trial's training ε ≤ "):], "each trial's training ε ≤ %g (the ε its line below prints), with its noisy score ε ≤ %g", &bound, &withScore); err != nil {
		t.Fatalf("no bound in the header: %v\n%s", err, stderr)
	}
	if !(withScore > bound) {
		t.Errorf("with the score ε ≤ %v, training alone ≤ %v: the score adds nothing", withScore, bound)
	}
	if !strings.Contains(stderr, "tune: expect about 3 trials (the mean of geometric") {
		t.Errorf("no expected number of trials up front:\n%s", stderr)
	}
	trials := 0
	for _, l := range strings.Split(stderr, "\n") {
		if i := strings.Index(l, "its training ε = "); i >= 0 {
			trials++
			if got := l[i+len("its training ε = "):]; got != strconv.FormatFloat(bound, 'g', 4, 64) {
				t.Errorf("trial line %q: ε %s, header's bound %v", l, got, bound)
			}
		}
	}
	if etas := strings.Count(stderr, "to go\n"); trials < 2 || etas != trials-1 {
		t.Errorf("%d trials, %d time-to-go lines (seed 5 draws more than one trial):\n%s", trials, etas, stderr)
	}
}
