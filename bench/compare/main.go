// Command compare times privtrain's training step against PyTorch's non-private step on the
// same models, alternately in one run, and prints throughputs, ratios and peak memory.
//
// Each round runs the Go benchmarks BenchmarkStep/{nonprivate,dp}/MODEL/B=256 (float32,
// package models) for each model of -models — by default the MNIST CNN with ReLU
// (mnistcnn) and tanh (mnist-cnn-tanh), logistic regression (logreg) and the CIFAR-10 CNN
// with ReLU and tanh (cifar10-cnn-relu, cifar10-cnn-tanh) — and bench/torch_step.py
// (PyTorch, non-private, the same models, batches in memory, 2 threads, OpenMP OpenBLAS),
// swapping which goes first every round so that drifts
// in the machine's load hit both sides alike. The summary gives the median and min–max over
// rounds of each throughput and of the per-round ratios ours/torch, and the peak RSS of a
// private training run of the MNIST CNN at batch 256 (this binary re-run as a child) next to
// the peak RSS of the PyTorch timing process.
//
// Run from the repository root:
//
//	go run ./bench/compare                       # 6 rounds, default (pure-Go) build
//	go run -tags openblas ./bench/compare        # the same with the OpenBLAS build of privtrain
//	go run ./bench/compare -rounds 10 -out /tmp/cmp   # also keep raw outputs (benchstat-able)
//	go run ./bench/compare -models mnistcnn,logreg    # the two models of earlier reports only
//
// Timings on a shared 2-core machine are noisy: the load average and the share of CPU time
// other processes took just before are printed with every round, and -quiet 0.1 waits for
// a quiet machine before each round. PyTorch's OpenMP threads degrade sharply (tenfold and
// more) when another process holds a core, so compare rounds taken on a quiet machine.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/privtrain/privtrain/bench/internal/benchenv"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/internal/privrand"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

const batch = 256

// allModels are the models compare knows on both sides (BenchmarkStep's case names and
// torch_step.py's names).
var allModels = []string{"mnistcnn", "mnist-cnn-tanh", "logreg", "cifar10-cnn-relu", "cifar10-cnn-tanh"}

// modelNames are the models of this run (-models).
var modelNames = allModels

func main() {
	rounds := flag.Int("rounds", 6, "number of alternating rounds")
	benchtime := flag.String("benchtime", "2s", "-test.benchtime of each Go benchmark")
	torchSeconds := flag.Float64("torch-seconds", 2, "length of each timed PyTorch window")
	torchThreads := flag.Int("torch-threads", 2, "torch.set_num_threads")
	tags := flag.String("tags", ownTags(), "build tags of the benchmarks (default: this binary's own)")
	rssSteps := flag.Int("rss-steps", 100, "steps of the private training run whose peak RSS is measured (0: skip)")
	out := flag.String("out", "", "directory to keep the raw Go benchmark output (go.txt) and PyTorch output (torch.txt)")
	python := flag.String("python", "/usr/bin/python3", "Python with torch 1.13")
	blasDir := flag.String("torch-blas", "/usr/lib/x86_64-linux-gnu/openblas-openmp", "LD_LIBRARY_PATH for PyTorch's BLAS")
	quiet := flag.Float64("quiet", 0, "before each round wait until other processes use less than this fraction of the CPUs, and repeat (up to 5 times) a round they disturbed more (0: do neither)")
	maxWait := flag.Duration("max-wait", 10*time.Minute, "longest wait for a quiet machine per round")
	trainChild := flag.Int("train-child", 0, "internal: train the MNIST CNN privately for this many steps and exit")
	modelList := flag.String("models", strings.Join(allModels, ","), "comma-separated models to compare: "+strings.Join(allModels, ", "))
	flag.Parse()
	modelNames = nil
	for _, m := range strings.Split(*modelList, ",") {
		if !slices.Contains(allModels, m) {
			fmt.Fprintf(os.Stderr, "compare: -models: unknown model %q (want some of %s)\n", m, strings.Join(allModels, ", "))
			os.Exit(2)
		}
		if !slices.Contains(modelNames, m) {
			modelNames = append(modelNames, m)
		}
	}
	waitQuiet = func() string { return benchenv.AwaitQuiet(*quiet, *maxWait) }
	quietLimit = *quiet

	if *trainChild > 0 {
		if err := trainPrivately(*trainChild); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rounds, *benchtime, *torchSeconds, *torchThreads, *tags, *rssSteps, *out, *python, *blasDir); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(rounds int, benchtime string, torchSeconds float64, torchThreads int, tags string, rssSteps int, out, python, blasDir string) error {
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "privtrain-compare")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	testBin := filepath.Join(tmp, "models.test")
	build := exec.Command("go", "test", "-c", "-o", testBin, "-tags", tags, "./models")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the benchmarks: %w", err)
	}
	var goRaw, torchRaw bytes.Buffer
	printHeader(tags, torchThreads)

	// results[impl][round]
	res := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		var goRes, torchRes map[string]float64
		var goOut, torchOut []byte
		var goForeign, torchForeign float64
		for attempt := 0; ; attempt++ {
			busy := waitQuiet()
			load := benchenv.LoadAvg()
			for _, goSide := range []bool{r%2 == 0, r%2 != 0} {
				if goSide {
					var buf bytes.Buffer
					if goRes, goForeign, err = runGo(testBin, benchtime, &buf); err != nil {
						return err
					}
					goOut = buf.Bytes()
				} else if torchRes, torchOut, torchForeign, err = runTorch(root, python, blasDir, torchSeconds, torchThreads); err != nil {
					return err
				}
			}
			fmt.Printf("round %d (load %s; before: %s; other processes during: go %.0f%%, torch %.0f%%):", r+1, load, busy,
				100*goForeign, 100*torchForeign)
			if quietLimit > 0 && max(goForeign, torchForeign) > quietLimit && attempt < retries {
				fmt.Println(" disturbed, repeated")
				continue
			}
			break
		}
		goRaw.Write(goOut)
		torchRaw.Write(torchOut)
		for _, m := range modelNames {
			for _, k := range []string{"dp/" + m, "nonprivate/" + m, "torch/" + m} {
				v := goRes[k]
				if strings.HasPrefix(k, "torch/") {
					v = torchRes[m]
				}
				res[k] = append(res[k], v)
				fmt.Printf("  %s %.0f", k, v)
			}
		}
		fmt.Println()
	}

	fmt.Printf("\nthroughput, examples/s (median, min–max over %d rounds)\n", rounds)
	for _, m := range modelNames {
		for _, k := range []string{"dp/" + m, "nonprivate/" + m, "torch/" + m} {
			med, lo, hi := benchenv.Spread(res[k])
			fmt.Printf("  %-28s %10.0f  (%.0f–%.0f)\n", k, med, lo, hi)
		}
	}
	fmt.Printf("\nratio to PyTorch non-private, per round (median, min–max)\n")
	targets := map[string]float64{"mnistcnn": 0.8, "logreg": 0.3}
	for _, m := range modelNames {
		for _, mode := range []string{"dp", "nonprivate"} {
			ratios := make([]float64, rounds)
			for r := range rounds {
				ratios[r] = res[mode+"/"+m][r] / res["torch/"+m][r]
			}
			med, lo, hi := benchenv.Spread(ratios)
			note := ""
			if t, ok := targets[m]; ok && mode == "dp" {
				note = fmt.Sprintf("   target ≥ %.1f", t)
			}
			fmt.Printf("  %-36s %6.2f  (%.2f–%.2f)%s\n", mode+"/"+m+" / torch", med, lo, hi, note)
		}
	}

	if rssSteps > 0 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		// The child is this binary: built with the same tags when run as "go run -tags …".
		rss, rate, err := benchenv.ChildRSS(exec.Command(self, "-train-child", strconv.Itoa(rssSteps)))
		if err != nil {
			return fmt.Errorf("private training run: %w", err)
		}
		fmt.Printf("\npeak RSS, private MNIST-CNN training at batch %d (%d steps, %s): %.0f MB   target < 500 MB\n", batch, rssSteps, rate, rss)
		cmd := exec.Command(python, filepath.Join(root, "bench", "torch_step.py"), "-model", "mnistcnn",
			"-seconds", fmt.Sprint(torchSeconds), "-repeats", "1", "-threads", strconv.Itoa(torchThreads))
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+blasDir)
		trss, _, err := benchenv.ChildRSS(cmd)
		if err != nil {
			return fmt.Errorf("PyTorch run: %w", err)
		}
		fmt.Printf("peak RSS, PyTorch non-private MNIST-CNN timing process: %.0f MB\n", trss)
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "go.txt"), goRaw.Bytes(), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "torch.txt"), torchRaw.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func printHeader(tags string, torchThreads int) {
	cpu, flags, _ := benchenv.CPUInfo()
	build := "pure Go"
	if tags != "" {
		build = "-tags " + tags
	}
	fmt.Printf("privtrain (%s, float32, batch %d, CPU path %s) vs PyTorch non-private (%d threads); CPU %s [%s], %d logical CPUs\n\n",
		build, batch, cpupath.Describe(), torchThreads, cpu, strings.Join(flags, " "), runtime.NumCPU())
}

var benchLine = regexp.MustCompile(`^BenchmarkStep/(nonprivate|dp)/([\w-]+)/B=256(?:-\d+)?\s.*?\s([0-9.e+]+) examples/s`)

func runGo(bin, benchtime string, raw *bytes.Buffer) (map[string]float64, float64, error) {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", "^BenchmarkStep$/^(nonprivate|dp)$/^("+strings.Join(modelNames, "|")+")$/B=256$",
		"-test.benchtime", benchtime, "-test.count", "1", "-test.benchmem")
	outb, foreign, err := benchenv.Measured(cmd)
	if err != nil {
		return nil, 0, fmt.Errorf("go benchmarks: %w\n%s", err, outb)
	}
	res := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(outb))
	for sc.Scan() {
		if m := benchLine.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return nil, 0, err
			}
			res[m[1]+"/"+m[2]] = v
		}
	}
	if len(res) != 2*len(modelNames) {
		return nil, 0, fmt.Errorf("go benchmarks: found %d of %d results in\n%s", len(res), 2*len(modelNames), outb)
	}
	return res, foreign, nil
}

var torchLine = regexp.MustCompile(`^torch (\S+) ([0-9.]+)`)

func runTorch(root, python, blasDir string, seconds float64, threads int) (map[string]float64, []byte, float64, error) {
	cmd := exec.Command(python, filepath.Join(root, "bench", "torch_step.py"), "-model", strings.Join(modelNames, ","),
		"-seconds", fmt.Sprint(seconds), "-repeats", "1", "-threads", strconv.Itoa(threads))
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+blasDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, foreign, err := benchenv.Measured(cmd)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("PyTorch: %w\n%s%s", err, outb, stderr.Bytes())
	}
	res := map[string]float64{}
	for _, l := range strings.Split(string(outb), "\n") {
		if m := torchLine.FindStringSubmatch(l); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return nil, nil, 0, err
			}
			res[m[1]] = v
		}
	}
	for _, m := range modelNames {
		if res[m] == 0 {
			return nil, nil, 0, fmt.Errorf("PyTorch: no result for %s in\n%s", m, outb)
		}
	}
	return res, outb, foreign, nil
}

// trainPrivately is the child of the RSS measurement: DP-SGD on the embedded MNIST sample
// with the MNIST CNN at batch 256, flat clipping C = 1, Gaussian noise z = 1.1, learning rate
// 0.25 (the TF Privacy tutorial's settings), for the given number of steps.
func trainPrivately(steps int) error {
	train, _, err := mnist.Embedded()
	if err != nil {
		return err
	}
	m, err := nn.New(models.MNISTCNN(models.ReLU), batch, nn.WithSeed(1))
	if err != nil {
		return err
	}
	const (
		clip  = 1.0
		noise = 1.1
		lr    = 0.25
	)
	rule := clipping.Flat{C: clip}
	rng := rand.New(rand.NewPCG(1, 2))
	L := train.Len()
	size := datasets.Size(train)
	x, labels := make([]float32, batch*size), make([]int, batch)
	grad, theta := make([]float64, m.NumParams()), make([]float64, m.NumParams())
	t0 := time.Now()
	for range steps {
		for i := range batch {
			labels[i] = train.Example(rng.IntN(L), x[i*size:(i+1)*size])
		}
		clear(grad)
		if _, err := m.ClippedGradient(nn.Batch{X: x, Labels: labels}, rule, grad); err != nil {
			return err
		}
		m.Params(theta)
		privrand.AddGaussian(rng, grad, noise*clip)
		for j := range theta {
			theta[j] -= lr * grad[j] / batch
		}
		if err := m.SetParams(theta); err != nil {
			return err
		}
	}
	fmt.Printf("%.0f examples/s\n", float64(steps*batch)/time.Since(t0).Seconds())
	return nil
}

var (
	waitQuiet  func() string
	quietLimit float64 // with -quiet, a round whose sides other processes disturbed more is repeated
)

// retries bounds how often a disturbed round is repeated.
const retries = 5

// ownTags is the -tags setting this binary was built with, so that "go run -tags openblas
// ./bench/compare" times the OpenBLAS build on both the benchmark and the RSS side.
func ownTags() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" {
				return s.Value
			}
		}
	}
	return ""
}
