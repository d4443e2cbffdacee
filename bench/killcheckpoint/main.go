// Command killcheckpoint is the fault-injection check of checkpoint writing: it kills
// "train -checkpoint c.ckpt -checkpoint-every 1" with SIGKILL at random moments and
// checks that a checkpoint, once written, is always there and loadable, that the run
// always resumes from it, and that no stale temporary file of a killed writer survives
// the next successful write.
//
//	go run ./bench/killcheckpoint                 # 30 trials of 3 kills each, ~2 minutes
//	go run ./bench/killcheckpoint -trials 50 -kills 5 -seed 7
//
// Each trial uses a fresh directory: it starts the run, kills it after a random delay,
// checks the directory, resumes (-resume c.ckpt) and kills again, -kills times, then lets
// a last resume finish. After every kill: if a checkpoint was ever written, c.ckpt must
// exist, load (checkpoint.Load verifies checksums, ledger and plan) and be at a step no earlier
// than the last one seen. After the final, successful run: no ".c.ckpt.tmp-*" file may
// remain. Exit status 1 if any check failed. Unix only (SIGKILL).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/privtrain/privtrain/nn/checkpoint"
)

func main() {
	trials := flag.Int("trials", 30, "independent trials")
	kills := flag.Int("kills", 3, "SIGKILLs per trial before the run may finish")
	seed := flag.Uint64("seed", 1, "seed of the kill delays")
	maxDelay := flag.Duration("max-delay", 0, "longest delay before a kill (default: the measured length of a whole run)")
	flag.Parse()
	if err := run(*trials, *kills, *seed, *maxDelay); err != nil {
		fmt.Fprintln(os.Stderr, "killcheckpoint:", err)
		os.Exit(1)
	}
}

var trainArgs = []string{"-model", "logreg", "-batch", "250", "-epochs", "2", "-noise", "1", "-checkpoint", "c.ckpt", "-checkpoint-every", "1"}

func run(trials, kills int, seed uint64, maxDelay time.Duration) error {
	work, err := os.MkdirTemp("", "killcheckpoint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "train")
	build := exec.Command("go", "build", "-o", bin, "github.com/privtrain/privtrain/cmd/train")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building cmd/train: %w", err)
	}
	if maxDelay == 0 {
		dir := filepath.Join(work, "calibrate")
		os.Mkdir(dir, 0o755)
		start := time.Now()
		if err := command(bin, dir, trainArgs).Run(); err != nil {
			return fmt.Errorf("an uninterrupted run failed: %w", err)
		}
		maxDelay = time.Since(start)
	}
	fmt.Printf("%d trials × %d kills, delays uniform in [0, %v]\n", trials, kills, maxDelay.Round(time.Millisecond))
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))
	var failures, killed, finishedEarly, withCheckpoint, strandedTemps, trialsWithTemps int
	fail := func(trial int, format string, a ...any) {
		failures++
		fmt.Printf("FAIL trial %d: %s\n", trial, fmt.Sprintf(format, a...))
	}
	for trial := 1; trial <= trials; trial++ {
		dir := filepath.Join(work, fmt.Sprintf("trial-%02d", trial))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		ckpt := filepath.Join(dir, "c.ckpt")
		lastStep, written, sawTemps := -1, false, false
		for k := 0; k <= kills; k++ {
			args := trainArgs
			if written {
				args = append([]string{"-resume", "c.ckpt"}, trainArgs...)
			}
			cmd := command(bin, dir, args)
			if err := cmd.Start(); err != nil {
				return err
			}
			if k < kills {
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case <-time.After(time.Duration(rng.Int64N(int64(maxDelay)))):
					cmd.Process.Signal(syscall.SIGKILL)
					<-done
					killed++
				case err := <-done:
					finishedEarly++
					if err != nil {
						fail(trial, "run %d ended with %v before it was killed", k+1, err)
					}
				}
			} else if err := cmd.Wait(); err != nil {
				fail(trial, "the final, uninterrupted resume failed: %v", err)
			}
			c, err := checkpoint.Load(ckpt)
			switch {
			case errors.Is(err, fs.ErrNotExist) && !written:
				// Killed before the first checkpoint: nothing to check yet.
			case err != nil:
				fail(trial, "after run %d: %v", k+1, err)
			default:
				written = true
				if c.Step < lastStep {
					fail(trial, "after run %d: checkpoint at step %d, earlier than step %d seen before", k+1, c.Step, lastStep)
				}
				lastStep = c.Step
			}
			temps, _ := filepath.Glob(filepath.Join(dir, ".c.ckpt.tmp-*"))
			if k < kills && len(temps) > 0 {
				sawTemps = true
				strandedTemps += len(temps)
			}
			if k == kills && len(temps) > 0 {
				fail(trial, "after the final successful run: stale temporary files %v", temps)
			}
		}
		if written {
			withCheckpoint++
		}
		if sawTemps {
			trialsWithTemps++
		}
		if lastStep != 64 {
			fail(trial, "the final run ended at step %d, want 64", lastStep)
		}
	}
	fmt.Printf("%d kills (%d runs finished before their kill); %d trials wrote a checkpoint; %d temporary files seen after kills (in %d trials)\n",
		killed, finishedEarly, withCheckpoint, strandedTemps, trialsWithTemps)
	if failures > 0 {
		return fmt.Errorf("%d checks failed", failures)
	}
	fmt.Println("ok: every checkpoint written was loadable and resumed; no stale temporary file survived a successful write")
	return nil
}

func command(bin, dir string, args []string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PRIVTRAIN_BUDGET_STORE="+filepath.Join(dir, "budget")) // not the user's store
	return cmd
}
