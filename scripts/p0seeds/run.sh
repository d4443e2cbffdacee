#!/bin/sh
# The P0 (DP-LSSGD) runs of issue 42 (docs/results/seeds.md, P0 section), one process
# at a time, nice 10, one thread; raw rows go to $OUT (default /tmp/p0runs) as each run
# finishes. Run from the repository root:
#
#	sh scripts/p0seeds/run.sh fig4|fig4bm|fig1|fig3|fig5|fig5nm2|fig7
#
# then sh scripts/p0seeds/tsv.sh turns them into docs/results/p0-*.tsv and renders the SVGs.
set -e
OUT=${OUT:-/tmp/p0runs}
mkdir -p "$OUT"
go build -o "$OUT/lstable2" ./scripts/lstable2
go build -o "$OUT/train" ./cmd/train
N="env GOMAXPROCS=1 nice -n 10"
LS="-dataset mnist -normalize -weight-decay 1e-4 -sampling poisson -max-order 1024 -noise calibrate"
case "$1" in
fig4) # a/t step sweep (Fig. 4) in Table 2's main-row regime; a = 2 is Table 2's own runs
	for a in 0.5 1 1.5 2 2.5 3; do
		$N "$OUT/lstable2" $LS -sigmas 0,3 -eps 0.20,0.10 -seeds 1,2,3,4,5 -a $a |
			grep --line-buffered -v -e '^#' -e '^eps_column' | sed -u "s/^/$a	/" >>"$OUT/fig4-raw.tsv"
	done ;;
fig4bm) # the same sweep with the authors' code's batch-mean clipping and noise stds (NOT DP at the column's ε; seeds.md)
	for a in 0.5 1 1.5 2 2.5 3; do
		$N "$OUT/lstable2" -dataset mnist -normalize -weight-decay 1e-4 -sampling poisson -max-order 1024 -noise authors \
			-clip batch-mean -sigmas 0,3 -eps 0.20,0.10 -seeds 1,2,3 -a $a |
			grep --line-buffered -v -e '^#' -e '^eps_column' | sed -u "s/^/$a	/" >>"$OUT/fig4bm-raw.tsv"
	done ;;
fig1) # Fig. 1 left/middle: DP-SGD's training and test loss per epoch at the other ε columns (fig3 has 0.20 and 0.10)
	$N "$OUT/lstable2" $LS -sigmas 0 -eps 0.30,0.25,0.15 -seeds 1,2,3,4,5 \
		-curves "$OUT/fig1-curves.tsv" >"$OUT/fig1-summary.tsv" ;;
fig3) # training and test loss per epoch (Fig. 3), a = 2
	$N "$OUT/lstable2" $LS -sigmas 0,1,3 -eps 0.20,0.10 -seeds 1,2,3,4,5 \
		-curves "$OUT/fig3-curves.tsv" >"$OUT/fig3-summary.tsv" ;;
fig5) # the TF tutorial CNN at NM 10 (Fig. 5): DP-Adam / DP-LSAdam (lr 0.001) and DP-SGD / DP-LSSGD (lr 0.15), seeds 1-3
	F="-dataset mnist -model cnn -activation relu -batch 256 -clip 1 -epochs 60 -lr-schedule step:1368:0.1 -noise 10"
	for s in 1 2 3; do
		for arm in "adam -optimizer dp-adam -lr 0.001" "lsadam -optimizer dp-lsadam -lr 0.001 -ls-sigma 1" \
			"sgd -optimizer dp-sgd -lr 0.15 -momentum 0" "lssgd -optimizer dp-lssgd -lr 0.15 -momentum 0 -ls-sigma 1"; do
			set -- $arm
			name=$1
			shift
			$N "$OUT/train" $F -seed $s -metrics "$OUT/m-$name-$s.jsonl" -json "$@" >"$OUT/$name-$s.json"
		done
	done ;;
fig5nm2) # Fig. 5's NM 2 panel: the four optimizers, σ_LS 0.2 (the paper's for NM 2), seeds 1-3
	F="-dataset mnist -model cnn -activation relu -batch 256 -clip 1 -epochs 60 -lr-schedule step:1368:0.1 -noise 2"
	for s in 1 2 3; do
		for arm in "adam -optimizer dp-adam -lr 0.001" "lsadam -optimizer dp-lsadam -lr 0.001 -ls-sigma 0.2" \
			"sgd -optimizer dp-sgd -lr 0.15 -momentum 0" "lssgd -optimizer dp-lssgd -lr 0.15 -momentum 0 -ls-sigma 0.2"; do
			set -- $arm
			name=nm2$1
			shift
			$N "$OUT/train" $F -seed $s -metrics "$OUT/m-$name-$s.jsonl" -json "$@" >"$OUT/$name-$s.json"
		done
	done ;;
fig7) # Fig. 7 left's third curve: DP-LSSGD σ_LS 2 at NM 10, lr 0.15 (σ_LS 0 and 1 are fig5's sgd and lssgd), seeds 1-3
	F="-dataset mnist -model cnn -activation relu -batch 256 -clip 1 -epochs 60 -lr-schedule step:1368:0.1 -noise 10"
	for s in 1 2 3; do
		$N "$OUT/train" $F -seed $s -metrics "$OUT/m-lssgd2-$s.jsonl" -json -optimizer dp-lssgd -lr 0.15 -momentum 0 -ls-sigma 2 >"$OUT/lssgd2-$s.json"
	done ;;
*)
	echo "usage: run.sh fig4|fig4bm|fig1|fig3|fig5|fig5nm2|fig7" >&2
	exit 2 ;;
esac
