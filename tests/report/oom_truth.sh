#!/bin/sh
# oom_truth.sh VRAMTRACE TRAIN CHECKER: every failed allocation of five GAN
# runs on the simulated device, held against the allocator's own state at
# that failure (train --oom-log) and its verdict against the rule
# (oom_truth_check.py): the README's quick start (split free memory,
# fragmentation and capacity), the vary_batch_fragmentation scenario (free
# blocks too small), the direct allocator (no cache: capacity) and a data set
# preloaded onto a 1 GiB device (the program's first allocation fails, before
# any memory sample: the context's memory was called use outside the
# recording that appeared since the start, verdict external) and
# --empty-cache on 512 MiB (a small-pool segment fails while the large pool
# holds a larger free block: was capacity, whose sum did not exceed the
# device), and the direct allocator on 384 MiB (a capacity failure whose
# text's sum exceeds the device only with the driver's rounding of the
# request, which the text did not give). The checker is also shown failing on a verdict changed to capacity.
set -eu
VT=$1
TRAIN=$2
CHECK=$3
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
# run NAME MEMORY TRAIN-ARGS...: record on a t4 (MEMORY: the sim's device
# memory, - for the t4's), report, check; train must exit 2 (OOM)
run() {
    name=$1 mem=$2
    shift 2
    st=0
    [ "$mem" = - ] && mem=
    env ${mem:+VRAMTRACE_SIM_MEMORY=$mem} \
        "$VT" run --sim=t4 -o "$D/$name.vtrace" -- "$TRAIN" --memory-only --log-every 1000 \
        --oom-log "$D/$name.jsonl" "$@" >"$D/$name.out" 2>&1 || st=$?
    [ "$st" -eq 2 ] || { cat "$D/$name.out" >&2; fail "$name: train exited $st, want 2 (OOM)"; }
    "$VT" report "$D/$name.vtrace" --json "$D/$name.json" -q || fail "$name: report failed"
    python3 "$CHECK" --report "$D/$name.json" --log "$D/$name.jsonl" || fail "$name: mismatch"
}
run quickstart - --image-size 256 --batch 1024 --steps 3
run vary 960MiB --synthetic --image-size 64 --batch 256 --steps 24 \
    --vary-batch=256,255,254,253
run direct - --allocator direct --image-size 256 --batch 1024 --steps 3
run preload 1GiB --synthetic --image-size 64 --batch 8 --steps 3 --preload-dataset
run pools 512MiB --synthetic --image-size 64 --batch 64 --steps 10 --empty-cache
# the direct allocator's 15.50 MiB request with 15.85 MiB free: the driver
# takes 16 MiB (a random configuration of a sweep, session 20)
run rounding 384MiB --synthetic --image-size 32 --batch 248 --steps 3 --checkpoint --fp16 \
    --early-free --allocator direct
st=0
python3 "$CHECK" --report "$D/quickstart.json" --log "$D/quickstart.jsonl" --perturb \
    >"$D/perturb.out" || st=$?
[ "$st" -eq 1 ] || fail "the checker did not catch a changed verdict (exit $st)"
echo "oom_truth: ok (the checker catches a changed verdict)"
