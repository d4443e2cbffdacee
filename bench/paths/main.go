// Command paths times privtrain's private training step of every built-in model on each
// kernel path the CPU supports (internal/cpupath: avx512, avx2, generic on amd64; neon,
// generic on arm64), beside PyTorch's non-private step of the same network, in alternating
// rounds of one run, and prints examples/s, the ratio to PyTorch, the FLOP rate achieved
// and its share of the path's peak, and peak memory (the table on stdout, progress per
// round with the load on stderr):
//
//	go run ./bench/paths                                   # every model, every path, 3 rounds
//	go run ./bench/paths -models mnist-cnn-relu,cifar10-cnn-relu -paths avx2 -rounds 5
//	go run ./bench/paths -format markdown > table.md       # or -format tsv
//
// Each cell is a process of its own: this binary re-run as a child with PRIVTRAIN_CPU set
// to the path (so the kernels are chosen at start-up exactly as a user's run chooses them,
// and the child's peak RSS is that of one model on one path), or bench/torch_step.py on the
// module export.PyTorch writes for the model (the same layers, PyTorch's initialisation,
// plain SGD, 2 threads, OpenMP OpenBLAS). Within a round the cells of a model run one after
// another, their order rotated every round, so that drifts in the machine's load hit every
// side alike; the ratios to PyTorch are taken per round. Each side is reported by wall time
// and by CPU time (examples per CPU-second of the process × the cores or threads it uses:
// GOMAXPROCS, or PyTorch's threads, whose OpenMP spinning counts as busy), since on a
// shared machine wall time swings with the load; the FLOP rate is from CPU time.
//
// The private step is BenchmarkStep's dp mode (package models) and bench/wrnstep's: the
// forward pass, the backward pass to every layer's pre-activation, per-example gradients
// clipped to norm 1 and summed (nn.Model.ClippedGradient), Gaussian noise on every
// coordinate, the ledger's record and an SGD update, float32, native engine, on a fixed
// random batch held in memory. PyTorch's step is zero_grad, forward, summed cross-entropy,
// backward, SGD update. The scatter-* models' front end (the scattering and the
// parameter-free layers after it, nn.Model.FrontEndLayers) runs once on the batch before
// the timing on both sides, as the trainer runs it once per data set: the step starts from
// its features.
//
// Batch: 256 for models of at most 10 MFLOP per example forward (logistic regression, the
// MNIST CNNs, scatter models on MNIST), 64 above (the CIFAR-10 networks, the residual
// networks: wrn-16-4's physical batch of issue 38's memory target), so a cell takes
// seconds (tens on the generic path); -batch sets one for all. Both sides use it. Fewer
// rows than the clipping workspace's chunk (16 for the residual networks) leave a core idle.
//
// FLOPs per example of a private step: 3F − F₁, where F is the forward pass's
// multiply-adds ×2 in the convolutions and dense layers (2·kh·kw·Cin·Cout·Hout·Wout and
// 2·in·out, residual blocks' bodies and shortcuts included), counted once for the forward
// pass, once for the input gradients (less F₁, the first parametrised layer's, which no
// one needs) and once for the weight gradients (per example here, summed in PyTorch: the
// same multiply-adds). Activations, pooling, normalisation, clipping, noise and the update
// are left out: they are O(activations + parameters), small beside the products. These
// are the direct products' counts: a convolution computed by Winograd's algorithm (the
// scatter CNNs' first, forward and per-example gradients) does fewer multiplications, so
// its model's GFLOP/s is an effective rate that can pass the peak. The peak
// is cores × GHz × FLOP/cycle, the clock from /proc/cpuinfo (-ghz overrides; under a
// hypervisor that is the nominal clock, and boost makes the share an overestimate) and
// FLOP/cycle per path from -flops-per-cycle: avx512 64 (two 512-bit FMA pipes × 16 fp32
// lanes × 2, as Zen 4/5 and Intel server cores with two FMA units), avx2 32 (two 256-bit
// FMA pipes), generic 16 (gonum's SSE: 4 lanes, a multiply and an add pipe each × 2),
// neon 16 (two 128-bit FMA pipes, as Neoverse N1; V1/V2 have four).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/bench/internal/benchenv"
	"github.com/privtrain/privtrain/clipping"
	"github.com/privtrain/privtrain/datasets"
	"github.com/privtrain/privtrain/dpoptim"
	"github.com/privtrain/privtrain/export"
	"github.com/privtrain/privtrain/internal/cpupath"
	"github.com/privtrain/privtrain/layers"
	"github.com/privtrain/privtrain/models"
	"github.com/privtrain/privtrain/nn"
)

const torchSide = "pytorch"

type options struct {
	rounds        int
	seconds       float64
	batch         int
	models, paths []string
	format        string
	torch         bool
	torchThreads  int
	python, blas  string
	ghz           float64
	flopsPerCycle map[string]float64
	quiet         float64
	maxWait       time.Duration
}

func main() {
	var o options
	var modelList, pathList, fpc string
	flag.IntVar(&o.rounds, "rounds", 3, "alternating rounds")
	flag.Float64Var(&o.seconds, "seconds", 2, "timed window of each cell (after one untimed step), at least 2 steps")
	flag.IntVar(&o.batch, "batch", 0, "batch of every model (0: 256, 64 or 16 by the model's FLOPs, see the doc)")
	flag.StringVar(&modelList, "models", "all", "comma-separated built-in models, or all")
	flag.StringVar(&pathList, "paths", "all", "comma-separated CPU paths, or all that this CPU supports")
	flag.StringVar(&o.format, "format", "text", "text, tsv or markdown")
	flag.BoolVar(&o.torch, "torch", true, "also time PyTorch's non-private step")
	flag.IntVar(&o.torchThreads, "torch-threads", runtime.NumCPU(), "torch.set_num_threads")
	flag.StringVar(&o.python, "python", "/usr/bin/python3", "Python with torch")
	flag.StringVar(&o.blas, "torch-blas", "/usr/lib/x86_64-linux-gnu/openblas-openmp", "LD_LIBRARY_PATH for PyTorch's BLAS")
	flag.Float64Var(&o.ghz, "ghz", 0, "clock for the FLOP peak (0: /proc/cpuinfo's cpu MHz)")
	flag.StringVar(&fpc, "flops-per-cycle", "avx512=64,avx2=32,generic=16,neon=16", "fp32 FLOP per cycle per core of each path, for the peak")
	flag.Float64Var(&o.quiet, "quiet", 0, "before each round wait until other processes use less than this fraction of the CPUs (0: don't)")
	flag.DurationVar(&o.maxWait, "max-wait", 10*time.Minute, "longest wait for a quiet machine per round")
	child := flag.String("child", "", "internal: time MODEL's private step in this process and print the result")
	cpuProfile := flag.String("cpuprofile", "", "with -child: write the timed steps' CPU profile to this file")
	flag.Parse()

	if *child != "" {
		if err := runChild(*child, o.batch, o.seconds, *cpuProfile); err != nil {
			fmt.Fprintln(os.Stderr, "paths:", err)
			os.Exit(1)
		}
		return
	}
	if err := o.parse(modelList, pathList, fpc); err != nil {
		fmt.Fprintln(os.Stderr, "paths:", err)
		os.Exit(2)
	}
	if err := run(&o); err != nil {
		fmt.Fprintln(os.Stderr, "paths:", err)
		os.Exit(1)
	}
}

func (o *options) parse(modelList, pathList, fpc string) error {
	if o.rounds < 1 || o.seconds <= 0 || o.batch < 0 {
		return fmt.Errorf("-rounds %d, -seconds %g, -batch %d: want positive (batch 0: by model)", o.rounds, o.seconds, o.batch)
	}
	if !slices.Contains([]string{"text", "tsv", "markdown"}, o.format) {
		return fmt.Errorf("-format %q: want text, tsv or markdown", o.format)
	}
	var names []string
	for _, s := range models.Builtin() {
		names = append(names, s.Name)
	}
	if modelList == "all" {
		o.models = names
	} else {
		for _, m := range strings.Split(modelList, ",") {
			if !slices.Contains(names, m) {
				return fmt.Errorf("-models: no built-in model %q (want some of %s)", m, strings.Join(names, ", "))
			}
			o.models = append(o.models, m)
		}
	}
	for _, p := range cpupath.Supported() {
		o.paths = append(o.paths, p.String())
	}
	if pathList != "all" {
		o.paths = nil
		for _, s := range strings.Split(pathList, ",") {
			p, err := cpupath.Parse(s)
			if err != nil {
				return fmt.Errorf("-paths: %v", err)
			}
			if !cpupath.Supports(p) {
				return fmt.Errorf("-paths: this CPU cannot run the %s path (it supports %v)", p, cpupath.Supported())
			}
			o.paths = append(o.paths, p.String())
		}
	}
	o.flopsPerCycle = map[string]float64{}
	for _, kv := range strings.Split(fpc, ",") {
		k, v, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || f <= 0 {
			return fmt.Errorf("-flops-per-cycle: %q is not path=number", kv)
		}
		o.flopsPerCycle[k] = f
	}
	return nil
}

func specOf(name string) nn.Spec {
	for _, s := range models.Builtin() {
		if s.Name == name {
			return s
		}
	}
	panic("no model " + name)
}

// cell is one side's results for one model over the rounds.
type cell struct {
	rate []float64 // examples/s, wall, per round
	cpu  []float64 // examples per CPU-second × the cores (threads) the side uses, per round
	rss  float64   // MB, the largest over the rounds
}

func run(o *options) error {
	root, err := benchenv.RepoRoot()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "privtrain-paths")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	cpuName, flags, ghz := benchenv.CPUInfo()
	if o.ghz > 0 {
		ghz = o.ghz
	}
	sides := slices.Clone(o.paths)
	if o.torch {
		sides = append(sides, torchSide)
	}
	batch, flops, modules, fronts := map[string]int{}, map[string]float64{}, map[string]string{}, map[string]int{}
	for _, name := range o.models {
		spec := specOf(name)
		fwd, first, err := forwardFLOPs(spec)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		flops[name] = 3*fwd - first
		batch[name] = o.batch
		if batch[name] == 0 {
			batch[name] = defaultBatch(fwd)
		}
		if o.torch {
			m, err := nn.New(spec, 1, nn.WithSeed(1))
			if err != nil {
				return err
			}
			fronts[name] = len(m.FrontEndLayers())
			modules[name] = filepath.Join(tmp, name+".py")
			if err := export.PyTorchFile(modules[name], m, "m", ""); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(os.Stderr, "CPU %s [%s], %d logical CPUs, %.2f GHz (/proc/cpuinfo); paths %s; %d rounds\n",
		cpuName, strings.Join(flags, " "), runtime.NumCPU(), ghz, strings.Join(o.paths, ", "), o.rounds)

	res := map[string]map[string]*cell{} // model → side → cell
	var loads []string
	for r := range o.rounds {
		busy := benchenv.AwaitQuiet(o.quiet, o.maxWait)
		loads = append(loads, benchenv.LoadAvg())
		fmt.Fprintf(os.Stderr, "round %d (load %s, %s before it)\n", r+1, loads[r], busy)
		for mi, name := range o.models {
			if res[name] == nil {
				res[name] = map[string]*cell{}
			}
			// Rotate the sides' order by round and model: each side goes first as often.
			k := (r + mi) % len(sides)
			order := append(slices.Clone(sides[k:]), sides[:k]...)
			var line []string
			for _, side := range order {
				var cmd *exec.Cmd
				if side == torchSide {
					cmd = exec.Command(o.python, filepath.Join(root, "bench", "torch_step.py"), "-module", modules[name],
						"-batch", strconv.Itoa(batch[name]), "-seconds", fmt.Sprint(o.seconds), "-repeats", "1",
						"-threads", strconv.Itoa(o.torchThreads), "-frontend", strconv.Itoa(fronts[name]))
					cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+o.blas)
				} else {
					cmd = exec.Command(self, "-child", name, "-batch", strconv.Itoa(batch[name]), "-seconds", fmt.Sprint(o.seconds))
					cmd.Env = append(os.Environ(), cpupath.Env+"="+side)
				}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, foreign, err := benchenv.Measured(cmd)
				if err != nil {
					return fmt.Errorf("%s on %s: %v\n%s%s", name, side, err, out, stderr.Bytes())
				}
				rate, cpu, rss, err := parseRate(out)
				if err != nil {
					return fmt.Errorf("%s on %s: %v", name, side, err)
				}
				c := res[name][side]
				if c == nil {
					c = &cell{}
					res[name][side] = c
				}
				c.rate, c.cpu = append(c.rate, rate), append(c.cpu, cpu)
				c.rss = max(c.rss, rss)
				line = append(line, fmt.Sprintf("%s %.1f (others %.0f%%)", side, rate, 100*foreign))
			}
			fmt.Fprintf(os.Stderr, "  %s B=%d: %s\n", name, batch[name], strings.Join(line, ", "))
		}
	}

	t := table{o: o, ghz: ghz, batch: batch, flops: flops, res: res}
	fmt.Printf("CPU: %s [%s], %d logical CPUs, %.2f GHz; PyTorch %s threads; %d rounds, load average (1/5/15 min) at their starts: %s\n\n",
		cpuName, strings.Join(flags, " "), runtime.NumCPU(), ghz, strconv.Itoa(o.torchThreads), o.rounds, strings.Join(loads, "; "))
	t.write(os.Stdout)
	return nil
}

var rateLine = regexp.MustCompile(`(?m)^(?:torch|private) \S+ ([0-9.]+) .*cpu-examples/s=([0-9.]+) rss-mb=([0-9.]+)`)

// parseRate reads a child's examples/s by wall time and by CPU time, and its peak RSS in MB
// as the child reads it (VmHWM: getrusage's ru_maxrss of a child would include its parent's
// peak from before the exec).
func parseRate(out []byte) (wall, cpu, rss float64, err error) {
	m := rateLine.FindSubmatch(out)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("no result in %q", out)
	}
	v := make([]float64, 3)
	for i := range v {
		if v[i], err = strconv.ParseFloat(string(m[i+1]), 64); err != nil {
			return 0, 0, 0, err
		}
	}
	return v[0], v[1], v[2], nil
}

// defaultBatch: 256 for small models, 64 for the rest (at 16 rows a residual network's
// step is one clipping chunk, which one core runs while the other waits).
func defaultBatch(fwdFLOPs float64) int {
	if fwdFLOPs <= 10e6 {
		return 256
	}
	return 64
}

type table struct {
	o     *options
	ghz   float64
	batch map[string]int
	flops map[string]float64
	res   map[string]map[string]*cell
}

func (t table) write(w io.Writer) {
	head := []string{"model", "batch", "MFLOP/example", "path", "examples/s (wall) median (min–max)", "× PyTorch per round",
		"examples/s by CPU time", "× PyTorch by CPU time", "GFLOP/s (CPU time)", "% of peak", "peak RSS MB"}
	var rows [][]string
	for _, name := range t.o.models {
		sides := slices.Clone(t.o.paths)
		if t.o.torch {
			sides = append(sides, torchSide)
		}
		for _, side := range sides {
			c := t.res[name][side]
			med, lo, hi := benchenv.Spread(c.rate)
			cmed, clo, chi := benchenv.Spread(c.cpu)
			ratio, cratio := "–", "–"
			if tc := t.res[name][torchSide]; tc != nil && side != torchSide {
				ratio, cratio = ratios(c.rate, tc.rate), ratios(c.cpu, tc.cpu)
			}
			// The FLOP rate from the CPU-time rate: what the path achieves on the core-seconds
			// it gets, which other processes on a shared machine disturb least.
			gflops := cmed * t.flops[name] / 1e9
			share := "–"
			fpc := t.o.flopsPerCycle[side]
			if side == torchSide {
				fpc = t.o.flopsPerCycle[cpupath.Supported()[0].String()] // PyTorch picks the CPU's best
			}
			if peak := float64(runtime.NumCPU()) * t.ghz * fpc; peak > 0 {
				share = fmt.Sprintf("%.1f", 100*gflops/peak)
			}
			label := side
			if side == torchSide {
				label = "PyTorch non-private"
			}
			rows = append(rows, []string{name, strconv.Itoa(t.batch[name]), fmt.Sprintf("%.4g", t.flops[name]/1e6), label,
				fmt.Sprintf("%s (%s–%s)", num(med), num(lo), num(hi)), ratio,
				fmt.Sprintf("%s (%s–%s)", num(cmed), num(clo), num(chi)), cratio,
				fmt.Sprintf("%.1f", gflops), share, fmt.Sprintf("%.0f", c.rss)})
		}
	}
	switch t.o.format {
	case "tsv":
		fmt.Fprintln(w, strings.Join(head, "\t"))
		for _, r := range rows {
			fmt.Fprintln(w, strings.Join(r, "\t"))
		}
	case "markdown":
		fmt.Fprintln(w, "| "+strings.Join(head, " | ")+" |")
		fmt.Fprintln(w, "|"+strings.Repeat("---|", len(head)))
		for _, r := range rows {
			fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
		}
	default:
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nPeak: %d cores × %.2f GHz × FLOP/cycle (%s); PyTorch's share is of the best path's peak.\n",
		runtime.NumCPU(), t.ghz, fpcString(t.o.flopsPerCycle))
	fmt.Fprintln(w, "FLOPs are the direct products' count; the scatter CNNs' first convolution runs by Winograd's algorithm with fewer, so their share can pass 100 %.")
}

// ratios is the median (min–max) of a[i]/b[i].
func ratios(a, b []float64) string {
	r := make([]float64, len(a))
	for i := range r {
		r[i] = a[i] / b[i]
	}
	m, lo, hi := benchenv.Spread(r)
	return fmt.Sprintf("%.2f (%.2f–%.2f)", m, lo, hi)
}

func fpcString(m map[string]float64) string {
	var s []string
	for _, p := range []string{"avx512", "avx2", "neon", "generic"} {
		if v, ok := m[p]; ok {
			s = append(s, fmt.Sprintf("%s %g", p, v))
		}
	}
	return strings.Join(s, ", ")
}

// num formats examples/s with three significant digits at least, thousands separated.
func num(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// forwardFLOPs is 2 × the multiply-adds of spec's convolutions and dense layers in one
// example's forward pass, and those of the first of them (whose input gradient no one
// computes).
func forwardFLOPs(spec nn.Spec) (total, first float64, err error) {
	var walk func(ls []layers.Layer, in []int) ([]int, error)
	walk = func(ls []layers.Layer, in []int) ([]int, error) {
		for _, l := range ls {
			out, err := l.OutputShape(in)
			if err != nil {
				return nil, err
			}
			var f float64
			switch l := l.(type) {
			case layers.Conv2D:
				f = 2 * float64(l.Kernel[0]*l.Kernel[1]*in[0]*out[0]*out[1]*out[2])
			case layers.WSConv2D:
				f = 2 * float64(l.Kernel[0]*l.Kernel[1]*in[0]*out[0]*out[1]*out[2])
			case layers.Dense:
				f = 2 * float64(prod(in)*l.Units)
			case layers.Residual:
				if _, err := walk(l.Body, in); err != nil {
					return nil, err
				}
				if _, err := walk(l.Shortcut, in); err != nil {
					return nil, err
				}
			default:
				if len(l.Params(in)) > 0 && !isNorm(l) {
					return nil, fmt.Errorf("no FLOP count for layer kind %q", l.Kind())
				}
			}
			if f > 0 && total == 0 {
				first = f
			}
			total += f
			in = out
		}
		return in, nil
	}
	_, err = walk(spec.Layers, spec.InputShape)
	return total, first, err
}

// isNorm: layers with parameters but no products (a GroupNorm's γ and β).
func isNorm(l layers.Layer) bool { _, ok := l.(layers.GroupNorm); return ok }

func prod(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}

// runChild times the private step of model at batch in this process, on the path
// PRIVTRAIN_CPU chose, and prints "private MODEL EXAMPLES/S path=… steps=…".
func runChild(model string, batch int, seconds float64, cpuProfile string) error {
	if err := cpupath.EnvError(); err != nil {
		return err
	}
	spec := specOf(model)
	if batch == 0 {
		fwd, _, err := forwardFLOPs(spec)
		if err != nil {
			return err
		}
		batch = defaultBatch(fwd)
	}
	m, err := nn.New(spec, batch, nn.WithSeed(1))
	if err != nil {
		return err
	}
	if m.Engine() != nn.EngineNative {
		return fmt.Errorf("%s runs on the %v engine, not the native one", model, m.Engine())
	}
	// A fixed random batch of images (pixels v/255, as the data sets load them); for a
	// model with a front end, its features, computed once as the trainer computes them
	// once per data set, and handed to the step as features.
	rng := rand.New(rand.NewPCG(1, 2))
	pixels, classes := make([]byte, batch*prod(spec.InputShape)), make([]byte, batch)
	for j := range pixels {
		pixels[j] = byte(rng.IntN(256))
	}
	for i := range classes {
		classes[i] = byte(rng.IntN(spec.NumClasses))
	}
	images, err := datasets.NewImages(spec.InputShape, spec.NumClasses, pixels, classes)
	if err != nil {
		return err
	}
	data, err := m.FrontEndFeatures(images)
	if err != nil {
		return err
	}
	row := prod(m.FeatureShape())
	x, labels := make([]float32, batch*row), make([]int, batch)
	for i := range labels {
		labels[i] = data.Example(i, x[i*row:(i+1)*row])
	}
	b := nn.Batch{X: x, Labels: labels, Features: m.HasFrontEnd()}
	grad, params := make([]float64, m.NumParams()), make([]float64, m.NumParams())
	rule := clipping.Flat{C: 1}
	opt, err := dpoptim.NewPrivate(dpoptim.NewSGD(dpoptim.Constant(1e-3)), dpoptim.PrivateConfig{
		NoiseMultiplier: 1.1, ClipNorm: rule.Bound(), SampleRate: float64(batch) / 60000,
		DatasetSize: 60000, Recorder: accountant.NewLedger(), Noise: dpoptim.NewSeededNoise(1),
	})
	if err != nil {
		return err
	}
	step := func() error {
		clear(grad)
		if _, err := m.ClippedGradient(b, rule, grad); err != nil {
			return err
		}
		m.Params(params)
		if err := opt.Step(params, grad, batch); err != nil {
			return err
		}
		return m.SetParams(params)
	}
	if err := step(); err != nil { // warm-up: first-call allocations, packing
		return err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	steps, t0, c0 := 0, time.Now(), cpuTime()
	for steps < 2 || time.Since(t0).Seconds() < seconds {
		if err := step(); err != nil {
			return err
		}
		steps++
	}
	wall, cpu := time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	fmt.Printf("private %s %.2f path=%s steps=%d cpu-examples/s=%.2f rss-mb=%.1f\n", model, float64(steps*batch)/wall,
		cpupath.Current(), steps, float64(steps*batch)/cpu*float64(runtime.GOMAXPROCS(0)), benchenv.PeakRSS())
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
