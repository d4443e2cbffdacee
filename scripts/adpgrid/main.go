// Command adpgrid runs a cut of the ADP-SGD paper's Tables 1 and 2 (Wu, Wang, Cristali,
// Gu, Willett; seeds digest §3.5) with cmd/train: for each (ε̄, C_G) cell, each schedule
// (poly: η_t = η/√(20+t), the paper's blue; sqrt-decay: η_t = η(0.1 − α_T√t), orange) and
// each algorithm (ADP-SGD, noise matched to the step; DP-SGD, constant noise at the same
// step sizes) and seed, it takes the paper's noise from its Theorem 4.1 with ε = 16·ε̄
// (σ² = (16G)²·B_δ·Σ_t 1/α_t²/(n²ε²), G = C_G; accountant.ADPNoise over the schedule's own
// α_t), turns it into cmd/train's noise multiplier z = σ·m/C_G, runs
//
//	train -optimizer adp-sgd -adp-schedule S -adp-noise matched|constant -noise z …
//
// and reports the best test accuracy over the epochs (the paper's "best validation
// accuracy": its validation set is CIFAR-10's test set) and the last one, with the ε that
// cmd/train's RDP ledger certifies for the same noise. One tab-separated line per run on
// stdout, then a summary (mean ± sd over the seeds) per cell.
//
//	go build -o /tmp/train ./cmd/train
//	nice -n 10 go run ./scripts/adpgrid -train /tmp/train -data ../shared/data/cifar10-sample \
//	    -cells 0.8:2.5,3.2:2.5 -seeds 1,2,3 -epochs 60
//
// -exhibit f3 runs the paper's appendix F.3 instead: DP-SGD (no momentum) with
// η_t = lr/√(2 + c·t) for each c of -cs (c = 0: the constant lr/√2) at each noise
// multiplier of -sigmas, by default on the embedded MNIST sample with the TF tutorial CNN
// (-model cnn -activation relu), clip 1, batch 256, 50 epochs:
//
//	nice -n 10 go run ./scripts/adpgrid -exhibit f3 -train /tmp/train -sigmas 1.6,6.4 \
//	    -seeds 1,2,3 -curves f3.tsv
//
// -curves appends every run's test error (%) per epoch to a TSV that scripts/utilityplot
// draws (series, epoch, seed, error).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/privtrain/privtrain/accountant"
	"github.com/privtrain/privtrain/datasets/cifar"
	"github.com/privtrain/privtrain/datasets/mnist"
	"github.com/privtrain/privtrain/dpoptim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "adpgrid:", err)
		os.Exit(1)
	}
}

type cell struct{ epsBar, clip float64 }

func run() error {
	trainBin := flag.String("train", "", "the cmd/train binary (go build -o FILE ./cmd/train)")
	dataset := flag.String("dataset", "cifar10", "cifar10 or mnist (the embedded sample); f3: default mnist")
	data := flag.String("data", "", "-data of cmd/train (the CIFAR-10 directory)")
	model := flag.String("model", "scatter-linear", "-model of cmd/train; f3: default cnn (the TF tutorial CNN)")
	cellList := flag.String("cells", "0.8:2.5", "ε̄:C_G cells, comma-separated")
	schedules := flag.String("schedules", "poly,sqrt-decay", "schedules (-adp-schedule): poly, sqrt-decay, adagrad-norm")
	beta := flag.Float64("adp-beta", 1, "β of adagrad-norm (Table 6)")
	adpC := flag.Float64("adp-c", 1e-5, "C of adagrad-norm's noise α_t² = √(20 + C·t) (Table 6)")
	algs := flag.String("algs", "adp,dp", "adp (matched noise), dp (constant noise)")
	seedList := flag.String("seeds", "1,2,3", "seeds")
	epochs := flag.Int("epochs", 60, "epochs (the paper: 60, 120, 200; f3: default 50, the paper's)")
	batch := flag.Int("batch", 256, "batch size m")
	lr := flag.Float64("lr", 1, "η of Algorithm 1 (the paper: 1)")
	delta := flag.Float64("delta", 1e-5, "δ")
	out := flag.String("out", "adpgrid-runs", "directory for the metrics and reports of the runs")
	featureCache := flag.String("feature-cache", "", "-feature-cache of cmd/train")
	budgetStore := flag.String("budget-store", "", "-budget-store of cmd/train")
	exhibit := flag.String("exhibit", "tables", "tables (Tables 1–5: ADP-SGD against DP-SGD at the paper's Theorem 4.1 noise, -cells) or f3 (appendix F.3: DP-SGD with η_t = lr/√(2 + c·t) for each c of -cs against the constant lr/√2, at the noise multipliers -sigmas)")
	sigmaList := flag.String("sigmas", "1.6,6.4", "f3: noise multipliers σ (the paper: 1.6, 3.2, 6.4, 12.8)")
	cList := flag.String("cs", "0,1e-5,1e-3,1e-2,0.1,0.5", "f3: decay constants c of η_t = lr/√(2 + c·t) (the paper's six)")
	clip := flag.Float64("clip", 1, "f3: clipping norm (the TF tutorial's 1)")
	activation := flag.String("activation", "", "-activation of cmd/train, when given; f3: default relu (the TF tutorial CNN's)")
	curves := flag.String("curves", "", "append each run's test error (%) per epoch to FILE, as utilityplot's TSV (series, epoch, seed, error)")
	flag.Parse()
	if *trainBin == "" {
		return fmt.Errorf("-train: give the cmd/train binary")
	}
	var curveOut *os.File
	if *curves != "" {
		f, err := os.OpenFile(*curves, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		curveOut = f
	}
	var seeds []int
	for _, s := range strings.Split(*seedList, ",") {
		v, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("-seeds %q: %v", *seedList, err)
		}
		seeds = append(seeds, v)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	switch *exhibit {
	case "tables":
	case "f3":
		given := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for name, v := range map[string]string{"dataset": "mnist", "model": "cnn", "epochs": "50", "activation": "relu"} {
			if !given[name] {
				flag.Set(name, v)
			}
		}
		sigmas, err := floats("-sigmas", *sigmaList)
		if err != nil {
			return err
		}
		cs, err := floats("-cs", *cList)
		if err != nil {
			return err
		}
		common := []string{"-dataset", *dataset, "-model", *model, "-optimizer", "dp-sgd", "-momentum", "0",
			"-lr", fmt.Sprint(*lr), "-batch", strconv.Itoa(*batch), "-epochs", strconv.Itoa(*epochs),
			"-clip", fmt.Sprint(*clip), "-delta", fmt.Sprint(*delta)}
		for _, f := range []struct{ flag, v string }{{"-activation", *activation}, {"-data", *data}, {"-budget-store", *budgetStore}} {
			if f.v != "" {
				common = append(common, f.flag, f.v)
			}
		}
		return runF3(*trainBin, *out, common, sigmas, cs, seeds, curveOut)
	default:
		return fmt.Errorf("-exhibit %q: want tables or f3", *exhibit)
	}
	n, err := trainSize(*dataset, *data)
	if err != nil {
		return err
	}
	var cells []cell
	for _, c := range strings.Split(*cellList, ",") {
		e, g, ok := strings.Cut(c, ":")
		eb, err1 := strconv.ParseFloat(e, 64)
		cg, err2 := strconv.ParseFloat(g, 64)
		if !ok || err1 != nil || err2 != nil || !(eb > 0) || !(cg > 0) {
			return fmt.Errorf("-cells %q: want ε̄:C_G pairs", *cellList)
		}
		cells = append(cells, cell{eb, cg})
	}
	steps := (n + *batch - 1) / *batch * *epochs
	type key struct {
		c        cell
		sch, alg string
	}
	best, last := map[key][]float64{}, map[key][]float64{}
	var order []key
	fmt.Println("eps_bar\tC_G\tschedule\talg\tseed\tz\trdp_eps\tbest_acc\tlast_acc\tbest_epoch")
	for _, c := range cells {
		for _, sch := range strings.Split(*schedules, ",") {
			for _, alg := range strings.Split(*algs, ",") {
				z, err := paperNoise(sch, alg, steps, n, *batch, c, *delta, *adpC)
				if err != nil {
					return err
				}
				k := key{c, sch, alg}
				order = append(order, k)
				for _, seed := range seeds {
					name := fmt.Sprintf("e%g-c%g-%s-%s-s%d", c.epsBar, c.clip, sch, alg, seed)
					noise := "matched"
					if alg == "dp" {
						noise = "constant"
					}
					args := []string{"-dataset", *dataset, "-model", *model, "-optimizer", "adp-sgd",
						"-adp-schedule", sch, "-adp-noise", noise, "-lr", fmt.Sprint(*lr), "-batch", strconv.Itoa(*batch),
						"-epochs", strconv.Itoa(*epochs), "-clip", fmt.Sprint(c.clip), "-noise", strconv.FormatFloat(z, 'g', -1, 64),
						"-delta", fmt.Sprint(*delta), "-seed", strconv.Itoa(seed)}
					if sch == "adagrad-norm" {
						args = append(args, "-adp-beta", fmt.Sprint(*beta), "-adp-c", fmt.Sprint(*adpC))
					}
					if *data != "" {
						args = append(args, "-data", *data)
					}
					if *featureCache != "" {
						args = append(args, "-feature-cache", *featureCache)
					}
					if *budgetStore != "" {
						args = append(args, "-budget-store", *budgetStore)
					}
					eps, accs, err := train(*trainBin, name, args, *out)
					if err != nil {
						return err
					}
					if err := curveLines(curveOut, fmt.Sprintf("ε̄ %g, C_G %g, %s, %s", c.epsBar, c.clip, sch, alg), seed, accs); err != nil {
						return err
					}
					b, l, at := bestLast(accs)
					best[k], last[k] = append(best[k], b), append(last[k], l)
					fmt.Printf("%g\t%g\t%s\t%s\t%d\t%.4f\t%.4f\t%.2f\t%.2f\t%d\n", c.epsBar, c.clip, sch, alg, seed, z, eps, 100*b, 100*l, at)
				}
			}
		}
	}
	fmt.Printf("\nsummary: n = %d, batch %d, %d epochs (T = %d), η = %g, %d seeds; accuracy %% mean ± sd\n", n, *batch, *epochs, steps, *lr, len(seeds))
	fmt.Println("eps_bar\tC_G\tschedule\talg\tbest\tlast")
	for _, k := range order {
		bm, bs := meanSD(best[k])
		lm, ls := meanSD(last[k])
		fmt.Printf("%g\t%g\t%s\t%s\t%.2f ± %.2f\t%.2f ± %.2f\n", k.c.epsBar, k.c.clip, k.sch, k.alg, 100*bm, 100*bs, 100*lm, 100*ls)
	}
	return nil
}

// runF3 runs appendix F.3: for each σ, c and seed, DP-SGD (common) at noise multiplier σ
// with -lr-schedule inverse-sqrt:2:c, i.e. η_t = lr/√(2 + c·t) (c = 0: the constant
// lr/√2). One line per run on stdout as it finishes, then the mean ± sd per (σ, c).
func runF3(bin, out string, common []string, sigmas, cs []float64, seeds []int, curveOut *os.File) error {
	type key struct{ sigma, c float64 }
	for _, sigma := range sigmas {
		if !(sigma > 0) {
			return fmt.Errorf("-sigmas: σ = %g: want noise multipliers > 0", sigma)
		}
	}
	best, last := map[key][]float64{}, map[key][]float64{}
	fmt.Println("sigma\tc\tseed\trdp_eps\tbest_acc\tlast_acc\tbest_epoch")
	for _, sigma := range sigmas {
		for _, c := range cs {
			for _, seed := range seeds {
				name := fmt.Sprintf("f3-z%g-c%g-s%d", sigma, c, seed)
				args := append(slices.Clip(common), "-lr-schedule", fmt.Sprintf("inverse-sqrt:2:%g", c),
					"-noise", fmt.Sprint(sigma), "-seed", strconv.Itoa(seed))
				eps, accs, err := train(bin, name, args, out)
				if err != nil {
					return err
				}
				if err := curveLines(curveOut, fmt.Sprintf("σ %g, c = %g", sigma, c), seed, accs); err != nil {
					return err
				}
				b, l, at := bestLast(accs)
				k := key{sigma, c}
				best[k], last[k] = append(best[k], b), append(last[k], l)
				fmt.Printf("%g\t%g\t%d\t%.4f\t%.2f\t%.2f\t%d\n", sigma, c, seed, eps, 100*b, 100*l, at)
			}
		}
	}
	fmt.Printf("\nsummary: %d seeds; test accuracy %% mean ± sd\n", len(seeds))
	fmt.Println("sigma\tc\tbest\tlast")
	for _, sigma := range sigmas {
		for _, c := range cs {
			k := key{sigma, c}
			bm, bs := meanSD(best[k])
			lm, ls := meanSD(last[k])
			fmt.Printf("%g\t%g\t%.2f ± %.2f\t%.2f ± %.2f\n", sigma, c, 100*bm, 100*bs, 100*lm, 100*ls)
		}
	}
	return nil
}

// floats parses a comma-separated list of numbers ≥ 0.
func floats(name, list string) ([]float64, error) {
	var v []float64
	for _, f := range strings.Split(list, ",") {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s %q: want numbers ≥ 0, comma-separated", name, list)
		}
		v = append(v, x)
	}
	return v, nil
}

// paperNoise is the paper's Theorem 4.1 noise for the schedule, as cmd/train's noise
// multiplier: σ from accountant.ADPNoise with G = C_G and ε = 16·ε̄ over the α_t that
// cmd/train's rule uses (all ones for DP-SGD), then z = σ·m/C_G.
func paperNoise(schedule, alg string, steps, n, batch int, c cell, delta, adpC float64) (float64, error) {
	var rule dpoptim.NoiseScaler
	constant := alg == "dp"
	switch schedule {
	case "poly":
		rule = &dpoptim.ADPPolynomial{Eta: 1, A: 19, C: 1, ConstantNoise: constant}
	case "sqrt-decay":
		rule = &dpoptim.ADPSqrtDecay{Eta: 1, Start: 0.1, End: 1e-10, Steps: steps, ConstantNoise: constant}
	case "adagrad-norm": // α_t² = √(b_0² + C·t), b_0² = 20, as cmd/train builds it
		rule = &dpoptim.ADPAdaGradNorm{Eta: 1, B0: math.Sqrt(20), Nu: 1e-5, C: adpC, ConstantNoise: constant}
	default:
		return 0, fmt.Errorf("schedule %q: want poly, sqrt-decay or adagrad-norm", schedule)
	}
	if alg != "adp" && alg != "dp" {
		return 0, fmt.Errorf("alg %q: want adp or dp", alg)
	}
	alphas, err := dpoptim.NoiseSchedule(rule, steps)
	if err != nil {
		return 0, err
	}
	sigma, err := accountant.ADPNoise(alphas, n, batch, c.clip, 16*c.epsBar, delta)
	if err != nil {
		return 0, err
	}
	return sigma * float64(batch) / c.clip, nil
}

// trainSize is the number of training examples cmd/train will see.
func trainSize(dataset, data string) (int, error) {
	switch dataset {
	case "cifar10":
		train, _, err := cifar.Load10(data, cifar.TrainOnly())
		if err != nil {
			return 0, err
		}
		return train.Len(), nil
	case "mnist":
		if data != "" {
			return 0, fmt.Errorf("-data: only the embedded MNIST sample")
		}
		train, _, err := mnist.Embedded()
		if err != nil {
			return 0, err
		}
		return train.Len(), nil
	}
	return 0, fmt.Errorf("-dataset %q: want cifar10 or mnist", dataset)
}

// train runs cmd/train with args and "-metrics OUT/NAME.jsonl -json" (its report in
// OUT/NAME.err) and returns the ε its ledger certifies and the test accuracy at the end of
// each epoch.
func train(bin, name string, args []string, out string) (eps float64, accs []float64, err error) {
	metrics := filepath.Join(out, name+".jsonl")
	args = append(args, "-metrics", metrics, "-json")
	fmt.Fprintf(os.Stderr, "adpgrid: %s: train %s\n", name, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	report, err := os.Create(filepath.Join(out, name+".err"))
	if err != nil {
		return 0, nil, err
	}
	cmd.Stderr = report
	stdout, err := cmd.Output()
	report.Close()
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %v (see %s.err)", name, err, filepath.Join(out, name))
	}
	var summary struct {
		Epsilon float64 `json:"epsilon"`
	}
	if err := json.Unmarshal(stdout, &summary); err != nil {
		return 0, nil, fmt.Errorf("%s: summary %q: %v", name, stdout, err)
	}
	accs, err = epochAccuracies(metrics)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %v", name, err)
	}
	return summary.Epsilon, accs, nil
}

// epochAccuracies reads cmd/train's metrics: the test accuracy at the end of each epoch,
// in order (epochs without an evaluation are left out).
func epochAccuracies(path string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var accs []float64
	for sc.Scan() {
		var r struct {
			Test *float64 `json:"test_accuracy"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, err
		}
		if r.Test != nil {
			accs = append(accs, *r.Test)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(accs) == 0 {
		return nil, fmt.Errorf("%s: no test accuracy", path)
	}
	return accs, nil
}

// bestLast is the best accuracy over the epochs (the paper's "best validation accuracy"),
// the last one, and the epoch (from 1) of the first best.
func bestLast(accs []float64) (best, last float64, at int) {
	best = -1
	for i, a := range accs {
		if a > best {
			best, at = a, i+1
		}
	}
	return best, accs[len(accs)-1], at
}

// curveLines appends one run's test error (%) per epoch to w as utilityplot's TSV lines
// (series, epoch, seed, error); w nil writes nothing.
func curveLines(w *os.File, series string, seed int, accs []float64) error {
	if w == nil {
		return nil
	}
	var b strings.Builder
	for i, a := range accs {
		fmt.Fprintf(&b, "%s\t%d\t%d\t%.2f\n", series, i+1, seed, 100*(1-a))
	}
	_, err := w.WriteString(b.String())
	return err
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}
