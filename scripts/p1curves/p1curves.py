#!/usr/bin/env python3
"""Summarise seed 001's F(x_t) - F* curves (docs/results/p1-fig*.tsv, written by
`erm reproduce -kuru -kuru-curves`): one Markdown row per TSV and series with
the mean +- sd over runs of the error at t = T/4, T/2 and the last iterate, and
the first recorded iteration at which the mean curve is at or below each
threshold (">T" when it never is). Standard library only.

    python3 scripts/p1curves/p1curves.py docs/results/p1-fig3-c1-T200.tsv ...
"""
import math
import sys
from collections import defaultdict

THRESHOLDS = (1.0, 0.1)


def read(path):
    curves = defaultdict(lambda: defaultdict(dict))  # series -> run -> t -> y
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#") or line.startswith("series\t"):
                continue
            s, t, run, y = line.split("\t")
            curves[s][int(run)][int(t)] = float(y)
    return curves


def mean_sd(v):
    m = sum(v) / len(v)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return m, sd


def g3(x):
    return f"{x:.3g}"


def at(runs, t):
    """Each run's value at the recorded t closest to t from below."""
    out = []
    for pts in runs.values():
        ts = [u for u in pts if u <= t]
        out.append(pts[max(ts)])
    return out


def main(paths):
    print("| file | series | T run | runs | F−F* at T/4 | at T/2 | last | first t with mean ≤ " +
          " | ≤ ".join(str(h) for h in THRESHOLDS) + " |")
    print("|---|---|---|---|---|---|---|" + "---|" * len(THRESHOLDS))
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        T = int(name.rsplit("-T", 1)[1].split(".")[0])
        for s, runs in read(path).items():
            last = max(max(p) for p in runs.values())
            ts = sorted(set.intersection(*(set(p) for p in runs.values())))
            mean = {t: sum(p[t] for p in runs.values()) / len(runs) for t in ts}
            cells = []
            for t in (T // 4, T // 2):
                if t > last:
                    cells.append("(stopped)")
                else:
                    m, sd = mean_sd(at(runs, t))
                    cells.append(f"{g3(m)} ± {g3(sd)}")
            m, sd = mean_sd([p[max(p)] for p in runs.values()])
            cells.append(f"{g3(m)} ± {g3(sd)}")
            for h in THRESHOLDS:
                hit = [t for t in ts if mean[t] <= h]
                cells.append(str(hit[0]) if hit else f">{last}")
            print(f"| {name} | {s} | {last} | {len(runs)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
