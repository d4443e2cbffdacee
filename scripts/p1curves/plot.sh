#!/bin/sh
# plot.sh: render every docs/results/p1-fig{3,4}-c*-T*.tsv (written by
# `erm reproduce -kuru -kuru-curves docs/results`) as an SVG beside it with the
# plot tool, printing each exact command. Run from the repository root.
set -e
for tsv in docs/results/p1-fig[34]-c*-T*.tsv; do
  base=${tsv%.tsv}; name=${base##*/p1-}          # fig3-c1-T200
  fig=${name%%-*}; rest=${name#*-}; c=${rest%%-*}; c=${c#c}; T=${rest##*-T}
  case $fig in fig3) m="m = n"; fn=3;; fig4) m="m = 1000"; fn=4;; esac
  case $c in 0.1) half=top;; *) half=bottom;; esac
  runs=$(awk -F'\t' '!/^#/ && $1 == "DP-GD" && $2 == 0 {k++} END {print k}' "$tsv")
  set -- go run ./scripts/utilityplot -in "$tsv" -out "$base.svg" \
    -title "Fig. $fn $half ($m, c = $c), T = $T: $runs runs" \
    -xlabel "iteration t" -ylabel "F(x_t) − F*" -logx=false -logy -legend top-right
  for a in "$@"; do case $a in *" "*) printf "'%s' " "$a";; *) printf '%s ' "$a";; esac; done; echo
  "$@"
done
