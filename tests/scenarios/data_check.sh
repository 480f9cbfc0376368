#!/bin/sh
# data_check.sh: the scenario suite trains on --synthetic data. That is sound only
# where data cannot matter: this runs the same real training (not --memory-only) on
# Debian's Fashion-MNIST and on --synthetic data under vramtrace and requires the
# same allocations, frees and peaks (allocated and reserved) from both reports.
# Every scenario claim is about memory or time per step (docs/scenarios.md).
# usage: data_check.sh VRAMTRACE TRAIN OUTDIR
set -u
vt=$1 train=$2 out=$3
rm -rf "$out" && mkdir -p "$out" || exit 2
numbers() { # $1 = tag, rest = extra train flags
    tag=$1
    shift
    "$vt" run --sim=t4 -o "$out/$tag.vtrace" -- "$train" "$@" --log-every 1000 --steps 3 \
        --batch 64 --image-size 64 >"$out/$tag.log" 2>&1 ||
        { cat "$out/$tag.log"; echo "data_check: FAIL: the $tag run failed"; exit 1; }
    "$vt" report "$out/$tag.vtrace" -q --json "$out/$tag.json" || exit 1
    python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["allocations"], t["frees"], t["peak_allocated_bytes"], t["peak_reserved_bytes"])' \
        "$out/$tag.json"
}
real=$(numbers real) || exit 1
synth=$(numbers synthetic --synthetic) || exit 1
echo "Fashion-MNIST: $real"
echo "synthetic:     $synth"
[ "$real" = "$synth" ] || { echo "data_check: FAIL: the data changes the memory numbers"; exit 1; }
echo "data_check: same allocations, frees and peaks with real and synthetic data"
