#!/usr/bin/env python3
"""Turns the raw P0 runs of run.sh (in $OUT, default /tmp/p0runs) into the TSVs behind the
P0 plots of docs/results/seeds.md (series, x, seed, y; utilityplot's format) and prints the
summary numbers the section quotes (mean ± sd over seeds, paired differences).

    python3 scripts/p0seeds/tsv.py fig1|fig3|fig4|fig4bm|fig5|fig5nm2|fig7

Each writes docs/results/p0-<fig>*.tsv (the raw runs and the plot TSVs); the plot
commands are in seeds.md beside each image.
"""
import glob
import json
import os
import statistics as st
import sys

OUT = os.environ.get("OUT", "/tmp/p0runs")
RES = "docs/results"

# Table 2 (paper, a = 2 in the authors' code): σ_LS 0 and 3 at ε 0.20 and 0.10.
TABLE2 = {("0.20", 0): 78.92, ("0.20", 3): 82.22, ("0.10", 0): 73.49, ("0.10", 3): 77.13}


def ms(v):
    return "%.2f ± %.2f" % (st.mean(v), st.stdev(v)) if len(v) > 1 else "%.2f" % v[0]


def fig4(raw="fig4-raw.tsv", prefix="p0-fig4"):
    rows = read_rows(raw)
    with open(f"{RES}/{prefix}-runs.tsv", "w") as f:
        f.write("a\teps_column\tz\tvariant\tsigma\tseed\ttest_accuracy\trdp_epsilon\tseconds\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    acc = {}
    with open(f"{RES}/{prefix}.tsv", "w") as f:
        f.write("series\ta\tseed\ttest_accuracy\n")
        for a, e, z, v, s, seed, y, *_ in rows:
            f.write(f"σ_LS {s}, ε {e}\t{a}\t{seed}\t{y}\n")
            acc.setdefault((e, int(float(s)), float(a)), {})[seed] = float(y)
        for (e, s), y in TABLE2.items():
            f.write(f"paper (Table 2, a = 2): σ_LS {s}, ε {e}\t2\t0\t{y}\n")
    for e in ("0.20", "0.10"):
        for a in sorted({k[2] for k in acc}):
            d0, d3 = acc.get((e, 0, a), {}), acc.get((e, 3, a), {})
            seeds = sorted(set(d0) & set(d3))
            if not seeds:
                continue
            diff = [d3[k] - d0[k] for k in seeds]
            print(f"ε {e} a {a:g}: σ0 {ms([d0[k] for k in seeds])}  σ3 {ms([d3[k] for k in seeds])}  "
                  f"Δ {st.mean(diff):+.2f} ± {st.stdev(diff):.2f} ({sum(x > 0 for x in diff)}/{len(diff)}) seeds {','.join(seeds)}")


CURVE_HEADER = "eps_column\tz\tvariant\tsigma\tseed\ta\tepoch\tstep\ttrain_loss\ttest_loss\ttest_accuracy\n"


def read_rows(name):
    return [l.rstrip("\n").split("\t") for l in open(os.path.join(OUT, name)) if l.strip()]


def copy_curves(name, dest):
    """Reads $OUT/name (lstable2 -curves lines), writes them with a header to dest, returns them."""
    rows = read_rows(name)
    with open(dest, "w") as f:
        f.write(CURVE_HEADER)
        for r in rows:
            f.write("\t".join(r) + "\n")
    return rows


def fig3():
    rows = copy_curves("fig3-curves.tsv", f"{RES}/p0-fig3-curves.tsv")
    # the paper's four panels: (a) training and (b) validation loss at ε 0.20, (c) and (d) at 0.10
    for panel, e, col, name in (("a", "0.20", 8, "training"), ("b", "0.20", 9, "test"),
                                ("c", "0.10", 8, "training"), ("d", "0.10", 9, "test")):
        with open(f"{RES}/p0-fig3{panel}.tsv", "w") as f:
            f.write("series\tepoch\tseed\tloss\n")
            for r in rows:
                if r[0] == e:
                    f.write(f"{name} loss, σ_LS {r[3]}\t{r[6]}\t{r[4]}\t{r[col]}\n")
    for e in ("0.20", "0.10"):
        for s in ("0", "1", "3"):
            last = [r for r in rows if r[0] == e and r[3] == s and r[6] == "50"]
            mid = [r for r in rows if r[0] == e and r[3] == s and r[6] == "10"]
            print(f"ε {e} σ {s}: epoch 10 train {ms([float(r[8]) for r in mid])} test {ms([float(r[9]) for r in mid])}; "
                  f"epoch 50 train {ms([float(r[8]) for r in last])} test {ms([float(r[9]) for r in last])} "
                  f"acc {ms([float(r[10]) for r in last])} (n={len(last)})")


def fig1():
    # DP-SGD (σ_LS 0) at all five ε columns: fig1-curves (0.30, 0.25, 0.15) and fig3-curves (0.20, 0.10)
    rows = copy_curves("fig1-curves.tsv", f"{RES}/p0-fig1-curves.tsv")
    rows += read_rows("fig3-curves.tsv")
    rows = [r for r in rows if r[3] == "0"]
    for col, name in ((8, "train"), (9, "test")):
        with open(f"{RES}/p0-fig1-{name}.tsv", "w") as f:
            f.write("series\tepoch\tseed\tloss\n")
            for e in ("0.30", "0.25", "0.20", "0.15", "0.10"):
                for r in rows:
                    if r[0] == e:
                        f.write(f"DP-SGD, ε {e}\t{r[6]}\t{r[4]}\t{r[col]}\n")
    for e in ("0.30", "0.25", "0.20", "0.15", "0.10"):
        last = [r for r in rows if r[0] == e and r[6] == "50"]
        print(f"ε {e}: epoch 50 train {ms([float(r[8]) for r in last])} test {ms([float(r[9]) for r in last])} "
              f"acc {ms([float(r[10]) for r in last])} (n={len(last)})")


def fig7():
    with open(f"{RES}/p0-fig7-left.tsv", "w") as f:
        f.write("series\tepoch\tseed\ttest_accuracy\n")
        for arm, label in (("sgd", "DP-SGD"), ("lssgd", "DP-LSSGD σ_LS 1"), ("lssgd2", "DP-LSSGD σ_LS 2")):
            for path in sorted(glob.glob(os.path.join(OUT, f"m-{arm}-*.jsonl"))):
                seed = path.rsplit("-", 1)[1].split(".")[0]
                summary = os.path.join(OUT, f"{arm}-{seed}.json")
                if not os.path.exists(summary) or os.path.getsize(summary) == 0:
                    continue
                for l in open(path):
                    m = json.loads(l)
                    f.write(f"{label}\t{m['epoch']}\t{seed}\t{100 * m['test_accuracy']:.2f}\n")
                s = json.load(open(summary))
                print(f"{label} seed {seed}: {100 * s['test_accuracy']:.2f}")


def arms(ls):
    return (("sgd", "DP-SGD, lr 0.15"), ("lssgd", f"DP-LSSGD σ_LS {ls}, lr 0.15"),
            ("adam", "DP-Adam, lr 0.001"), ("lsadam", f"DP-LSAdam σ_LS {ls}, lr 0.001"))


def fig5(pre="", name="p0-fig5-nm10", ls=1):
    final = {}
    ARMS = [(pre + a, label) for a, label in arms(ls)]
    with open(f"{RES}/{name}-runs.tsv", "w") as raw, open(f"{RES}/{name}.tsv", "w") as f:
        raw.write("arm\tseed\tepoch\tstep\ttrain_loss\ttest_loss\ttest_accuracy\tepsilon\n")
        f.write("series\tepoch\tseed\ttest_accuracy\n")
        for arm, label in ARMS:
            for path in sorted(glob.glob(os.path.join(OUT, f"m-{arm}-*.jsonl"))):
                seed = path.rsplit("-", 1)[1].split(".")[0]
                summary = os.path.join(OUT, f"{arm}-{seed}.json")
                if not os.path.exists(summary) or os.path.getsize(summary) == 0:
                    continue  # unfinished run
                for l in open(path):
                    m = json.loads(l)
                    raw.write(f"{arm}\t{seed}\t{m['epoch']}\t{m['step']}\t{m['loss']:.6g}\t{m['test_loss']:.6g}\t"
                              f"{100 * m['test_accuracy']:.2f}\t{m['epsilon']:.4f}\n")
                    f.write(f"{label}\t{m['epoch']}\t{seed}\t{100 * m['test_accuracy']:.2f}\n")
                s = json.load(open(summary))
                final.setdefault(arm, {})[seed] = (100 * s["test_accuracy"], s["epsilon"])
    for arm, label in ARMS:
        d = final.get(arm, {})
        if d:
            v = [d[k][0] for k in sorted(d)]
            print(f"{label}: {ms(v)} ({' / '.join('%.2f' % x for x in v)}) ε {list(d.values())[0][1]:.3f} seeds {','.join(sorted(d))}")
    for a, b in (("sgd", "lssgd"), ("adam", "lsadam"), ("lssgd", "adam"), ("sgd", "adam")):
        a, b = pre + a, pre + b
        da, db = final.get(a, {}), final.get(b, {})
        seeds = sorted(set(da) & set(db))
        if seeds:
            diff = [db[k][0] - da[k][0] for k in seeds]
            print(f"{b} − {a}: {st.mean(diff):+.2f} ({' / '.join('%+.2f' % x for x in diff)}; {sum(x > 0 for x in diff)}/{len(diff)})")


{"fig5nm2": lambda: fig5("nm2", "p0-fig5-nm2", 0.2), "fig4bm": lambda: fig4("fig4bm-raw.tsv", "p0-fig4-batchmean"), "fig1": fig1, "fig4": fig4, "fig3": fig3, "fig5": fig5, "fig7": fig7}[sys.argv[1]]()
