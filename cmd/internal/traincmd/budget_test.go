package traincmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/budget"
	"github.com/privtrain/privtrain/cmd/internal/exit"
	"github.com/privtrain/privtrain/internal/pgtest"
	"github.com/privtrain/privtrain/nn/checkpoint"
	"github.com/privtrain/privtrain/training"
)

// The test binary doubles as the train command for the tests that need processes of their
// own: with childArgsEnv set, TestMain runs Main with those arguments (a JSON list) and,
// with childStepsEnv naming a file, writes the global step there after every step.
const (
	childArgsEnv  = "PRIVTRAIN_TEST_TRAIN_ARGS"
	childStepsEnv = "PRIVTRAIN_TEST_TRAIN_STEPS"
)

// TestMain runs the child command, or the tests with the budget store in a temporary
// directory: no test writes the user's store.
func TestMain(m *testing.M) {
	if a := os.Getenv(childArgsEnv); a != "" {
		var args []string
		if err := json.Unmarshal([]byte(a), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(99)
		}
		if p := os.Getenv(childStepsEnv); p != "" {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(99)
			}
			// The page cache outlives a SIGKILL of the writer: no fsync needed.
			stepHook = func(p training.StepProgress) { f.WriteAt(fmt.Appendf(nil, "%012d\n", p.GlobalStep), 0) }
		}
		os.Exit(Main(args))
	}
	// A test that runs this binary as a child of its own (lock_test.go) keeps its
	// parent's temporary store: the child may end in os.Exit, past any cleanup.
	const prefix = "traincmd-budget-"
	if d := os.Getenv(budget.StoreEnv); strings.HasPrefix(filepath.Base(d), prefix) && filepath.Dir(d) == filepath.Clean(os.TempDir()) {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(budget.StoreEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	cleanupMPIBuild()
	pgtest.Stop()
	os.Exit(code)
}

// child is the train command in a process of its own.
func child(t *testing.T, stepsFile string, args ...string) *exec.Cmd {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(a), childStepsEnv+"="+stepsFile)
	return cmd
}

// qOneArgs trains logistic regression on the training rows of a CSV (writeBlobsCSV) with
// a batch of all of them: q = 1, one step per epoch, each the Gaussian mechanism with
// multiplier z. The number of training rows is what the command's own split leaves
// (-test-fraction holds rows out by a hash of their content: about, not exactly, 20 %).
func qOneArgs(t *testing.T, csv, store string, epochs int, z float64, extra ...string) []string {
	t.Helper()
	data := append([]string{"-dataset", "csv:" + csv, "-label", "species", "-scale", "0:10"}, extra...)
	o := parseOptions(t, data...)
	train, _, _, _, err := loadData(o)
	if err != nil {
		t.Fatal(err)
	}
	if o.validation > 0 {
		if train, _, _, err = splitValidation(o, train); err != nil {
			t.Fatal(err)
		}
	}
	return append(data, "-batch", strconv.Itoa(train.Len()), "-epochs", strconv.Itoa(epochs),
		"-noise", strconv.FormatFloat(z, 'g', -1, 64), "-lr", "0.5", "-budget-store", store)
}

// Closed forms, independent of the accountant: T steps of the Gaussian mechanism (q = 1)
// with noise multiplier z are one Gaussian mechanism with σ = z/√T; its exact δ(ε) is
// Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) (Balle and Wang 2018, Theorem 8), inverted here by
// bisection; its RDP is Tα/(2z²) (Mironov 2017), converted by Balle et al. 2020 (Theorem
// 21) at the orders 1.1…10.9, 12…256.
func exactGaussianEpsilon(T int, z, delta float64) float64 {
	sigma := z / math.Sqrt(float64(T))
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	d := func(eps float64) float64 {
		return phi(1/(2*sigma)-eps*sigma) - math.Exp(eps)*phi(-1/(2*sigma)-eps*sigma)
	}
	lo, hi := 0.0, 1.0
	for d(hi) > delta {
		hi *= 2
	}
	for range 200 {
		if mid := (lo + hi) / 2; d(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func rdpGaussianEpsilon(T int, z, delta float64) float64 {
	best := math.Inf(1)
	orders := []float64{}
	for i := 11; i <= 109; i++ {
		orders = append(orders, float64(i)/10)
	}
	for a := 12; a <= 256; a++ {
		orders = append(orders, float64(a))
	}
	for _, a := range orders {
		r := float64(T) * a / (2 * z * z)
		best = min(best, r+math.Log((a-1)/a)-(math.Log(delta)+math.Log(a))/(a-1))
	}
	return best
}

// checkGaussian checks a composition of T Gaussian steps against both closed forms: at
// least the exact ε, at most the RDP bound, and within 0.2 % of the exact ε (the PLD
// bound's discretisation).
func checkGaussian(t *testing.T, what string, c budget.Composition, T int, z float64) {
	t.Helper()
	exact, rdp := exactGaussianEpsilon(T, z, 1e-5), rdpGaussianEpsilon(T, z, 1e-5)
	if c.Delta != 1e-5 || c.Epsilon < exact-1e-9 || c.Epsilon > rdp+1e-9 || c.Epsilon > exact*1.002 {
		t.Errorf("%s: ε = %v at δ = %v (%s); want δ = 1e-5 and ε within 0.2%% above the exact %v (RDP bound %v) of %d steps", what, c.Epsilon, c.Delta, c.Method, exact, rdp, T)
	}
}

func onlyDataset(t *testing.T, dir string) budget.Dataset {
	t.Helper()
	s, err := budget.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := s.Datasets(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 {
		t.Fatalf("%d data sets in the store, want 1: %+v", len(ds), ds)
	}
	return ds[0]
}

// Done-when: four processes training at once on the same data and store leave four
// settled runs, and the store's ε is the composition of their 4×5 Gaussian steps,
// computed here from the closed forms.
func TestBudgetConcurrentProcesses(t *testing.T) {
	csv, store := writeBlobsCSV(t, 50), t.TempDir()
	const z = 5.0
	var cmds []*exec.Cmd
	outs := make([]strings.Builder, 4)
	for i := range 4 {
		c := child(t, "", qOneArgs(t, csv, store, 5, z)...)
		c.Stderr = &outs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
	}
	d := onlyDataset(t, store)
	if d.Runs != 4 || d.Unsettled != 0 || d.Steps != 20 || d.Name != "csv:"+csv {
		t.Errorf("store: %d runs (%d unsettled), %d steps, name %q; want 4 settled runs of 5 steps on csv:%s", d.Runs, d.Unsettled, d.Steps, d.Name, csv)
	}
	checkGaussian(t, "4 processes", d.Composition, 20, z)
	for i := range outs {
		if !strings.Contains(outs[i].String(), "budget: data set "+d.Fingerprint[:12]) || !strings.Contains(outs[i].String(), "settled at ε = ") {
			t.Errorf("process %d does not report the data set's spend:\n%s", i, outs[i].String())
		}
	}
}

// Done-when: kill -9 at random moments (before, during and after the reservation, during
// the steps, during the commit) never leaves a store that cannot be read or that counts
// fewer steps than ran. A step is counted as run when the child has written its number,
// after the step: the store must hold at least that many steps of the trial (a
// reservation of all 30, or the commit of what ran); a trial that finished must hold
// exactly what ran. 30 trials (6 with -short; PRIVTRAIN_KILL_TRIALS=N for more).
func TestBudgetKill(t *testing.T) {
	trials := 30
	if testing.Short() {
		trials = 6
	}
	if s := os.Getenv("PRIVTRAIN_KILL_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	csv, store := writeBlobsCSV(t, 50), t.TempDir()
	const steps = 30
	args := qOneArgs(t, csv, store, steps, 50) // much noise: small ε, whose PLD composes fast
	// One run to completion times a run and creates the data set's entry.
	start := time.Now()
	if out, err := child(t, "", args...).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	full := time.Since(start)
	counted := onlyDataset(t, store).Steps
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var killed, finished int
	for i := range trials {
		stepsFile := filepath.Join(t.TempDir(), "steps")
		c := child(t, stepsFile, args...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Float64() * 1.5 * float64(full)))
		c.Process.Signal(syscall.SIGKILL)
		err := c.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			killed++
		} else if err == nil {
			finished++
			// The run beat its kill: runs are faster now than the timing run was
			// (a busy machine that quietened, a warm cache), so aim the next kills
			// earlier; otherwise too few trials would be killed to test anything.
			full = full * 3 / 4
		} else {
			t.Fatalf("trial %d: %v", i, err)
		}
		ran := 0
		if b, err := os.ReadFile(stepsFile); err == nil && len(b) > 0 {
			if ran, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatalf("trial %d: steps file %q", i, b)
			}
		}
		d := onlyDataset(t, store) // fails the test if the store cannot be read
		got := d.Steps - counted
		if got < ran || (err == nil && got != steps) || (got != 0 && got != steps && got != ran) {
			t.Fatalf("trial %d (%v): the store counts %d steps for it, %d ran", i, err, got, ran)
		}
		counted = d.Steps
	}
	t.Logf("%d trials: %d killed, %d finished (a full run takes %v)", trials, killed, finished, full)
	if killed < trials/3 {
		t.Errorf("only %d of %d trials were killed", killed, trials)
	}
}

// Done-when: two resumes of one checkpoint to different paths both count: the data set's
// ε exceeds the ε of either lineage (the checkpoints' own ledgers); the store holds 2 + 2
// + 3 steps. A resume counts only its new steps, and a store that has not seen the
// checkpoint's lineage imports the checkpoint's ledger once.
func TestBudgetFork(t *testing.T) {
	csv, store, dir := writeBlobsCSV(t, 50), t.TempDir(), t.TempDir()
	const z = 5.0
	a, b := filepath.Join(dir, "a.ckpt"), filepath.Join(dir, "b.ckpt")
	mustRun(t, append(qOneArgs(t, csv, store, 2, z), "-checkpoint", a)...)
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a2, b2 := filepath.Join(dir, "a2.ckpt"), filepath.Join(dir, "b2.ckpt")
	mustRun(t, "-resume", a, "-checkpoint", a2, "-epochs", "4", "-budget-store", store)
	mustRun(t, "-resume", b, "-checkpoint", b2, "-epochs", "5", "-budget-store", store)
	d := onlyDataset(t, store)
	if d.Steps != 7 || d.Runs != 3 {
		t.Errorf("store: %d steps in %d runs, want 7 in 3", d.Steps, d.Runs)
	}
	checkGaussian(t, "two forks", d.Composition, 7, z)
	for _, p := range []string{a2, b2} {
		c, err := checkpoint.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		lineage, err := c.Ledger.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if !(d.Epsilon > lineage.Epsilon) {
			t.Errorf("data set ε = %v, not above the ε = %v of the lineage of %s (%d steps)", d.Epsilon, lineage.Epsilon, p, c.Ledger.Steps())
		}
	}
	// Another store has not seen the lineage: the resume imports the checkpoint's 2 steps.
	other := t.TempDir()
	mustRun(t, "-resume", a, "-checkpoint", filepath.Join(dir, "a3.ckpt"), "-epochs", "3", "-budget-store", other)
	s, _ := budget.Open(other, nil)
	od, runs, err := s.Runs(d.Fingerprint, 0)
	if err != nil {
		t.Fatal(err)
	}
	if od.Steps != 3 || len(runs) != 2 || !runs[0].Import || runs[0].Spend.Steps() != 2 || runs[1].Spend.Steps() != 1 || runs[1].Parent == nil || runs[1].Parent.Step != 2 {
		t.Errorf("resume into a new store: %d steps, runs %+v; want an import of 2 steps and a run of 1 with parent at step 2", od.Steps, runs)
	}
}

// -budget refuses with exit status 2, before the first step, a plan that would take the
// data set past the budget, and records nothing; a store that fails verification is
// refused too. -validation runs are charged to the whole training set they split.
func TestBudgetFlag(t *testing.T) {
	csv, store := writeBlobsCSV(t, 50), t.TempDir()
	const z = 5.0
	mustRun(t, qOneArgs(t, csv, store, 5, z)...)
	limit := 1.01 * exactGaussianEpsilon(8, z, 1e-5) // 5 spent; 3 more fit, 5 more would pass it
	metrics := filepath.Join(t.TempDir(), "m.jsonl")
	code, _, stderr := runCmd(t, context.Background(), append(qOneArgs(t, csv, store, 5, z), "-budget", fmt.Sprint(limit), "-metrics", metrics)...)
	if code != exit.Usage || !strings.Contains(stderr, "refused before the first step") || !strings.Contains(stderr, "-budget") {
		t.Fatalf("over the budget: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(metrics); len(b) > 0 {
		t.Errorf("a refused run wrote metrics: %s", b)
	}
	if d := onlyDataset(t, store); d.Steps != 5 || d.Runs != 1 {
		t.Errorf("the refused run was recorded: %+v", d)
	}
	mustRun(t, append(qOneArgs(t, csv, store, 3, z), "-budget", fmt.Sprint(limit))...)
	// A -validation run splits the same training set: same data set.
	mustRun(t, qOneArgs(t, csv, store, 1, z, "-validation", "0.25")...)
	d := onlyDataset(t, store)
	if d.Runs != 3 || d.Steps != 9 {
		t.Errorf("after a -validation run: %d runs, %d steps; want 3 runs, 9 steps on one data set", d.Runs, d.Steps)
	}
	// Tamper with the ledger: every run is refused, naming the data set.
	ledger := filepath.Join(store, d.Fingerprint+".ledger")
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"steps":5`) {
		t.Fatalf("no run of 5 steps in the ledger:\n%s", b)
	}
	os.WriteFile(ledger, []byte(strings.Replace(string(b), `"steps":5`, `"steps":1`, 1)), 0o600)
	code, _, stderr = runCmd(t, context.Background(), qOneArgs(t, csv, store, 1, z)...)
	if code != exit.Usage || !strings.Contains(stderr, "fails verification") || !strings.Contains(stderr, d.Fingerprint) {
		t.Errorf("tampered store: exit %d\n%s", code, stderr)
	}
}

// A -tune search records its whole spend (the Papernot–Steinke curve, every trial and the
// choice of the best) on the whole training set, once; its trials record nothing of their
// own. The data set's ε is the search's, recomputed independently (searchEpsilon), and
// -budget refuses a search past it before the first trial.
func TestBudgetTuneSearch(t *testing.T) {
	store := t.TempDir()
	args := append(slices.Clone(tinySearch), "-batch", "512", "-noise", "3", "-no-checkpoint", "-budget-store", store, "-tune", "lr=1,2;trials=poisson:mean=2")
	code, out, stderr := runCmd(t, context.Background(), args...)
	if code != exit.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	s := decodeTune(t, out)
	d, _ := accountant.PoissonTrials(2)
	want, _ := searchEpsilon(t, 8000-s.ValidationN, d, [][2]int{{512, 1}}, 3, defaultScoreNoise, 1e-5)
	ds := onlyDataset(t, store)
	if ds.Runs != 1 || ds.Unsettled != 0 || ds.Method != "rdp" || math.Abs(ds.Epsilon-want) > 1e-9*want || ds.Name != "mnist" {
		t.Errorf("store after a search: %+v; want one settled run of ε = %v (rdp) on mnist", ds, want)
	}
	code, _, stderr = runCmd(t, context.Background(), append(args, "-budget", fmt.Sprint(1.5*want))...)
	if code != exit.Usage || !strings.Contains(stderr, "refused before the first step") {
		t.Errorf("a second search past -budget: exit %d\n%s", code, stderr)
	}
	if ds := onlyDataset(t, store); ds.Runs != 1 {
		t.Errorf("the refused search was recorded: %+v", ds)
	}
}
