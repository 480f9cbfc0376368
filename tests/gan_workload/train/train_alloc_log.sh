#!/bin/sh
# --memory-only makes the same allocation sequence (sizes, order, tags) as real training, for
# the default loop and the scenario flags that change what is kept.
# usage: train_alloc_log.sh TRAIN TRAIN_CHECK SIM_LIB_DIR WORK_DIR
set -eu
train=$1 check=$2 sim=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
small="--steps 3 --batch 8 --ngf 16 --ndf 16 --log-every 1 --samples-initial $dir/s.png"
i=0
for flags in "" "--checkpoint" "--fp16" "--early-free" "--accum-steps 2" \
    "--checkpoint --fp16 --early-free" "--vary-batch=8,5,7" "--preload-dataset --synthetic"; do
    i=$((i + 1))
    echo "== flags: ${flags:-(default)}"
    # shellcheck disable=SC2086
    LD_LIBRARY_PATH="$sim" "$train" $small $flags --alloc-log "$dir/real$i.log" >"$dir/real$i.out"
    # shellcheck disable=SC2086
    LD_LIBRARY_PATH="$sim" "$train" $small $flags --memory-only --alloc-log "$dir/mem$i.log" \
        >"$dir/mem$i.out"
    "$check" same-allocs "$dir/real$i.log" "$dir/mem$i.log"
done
# The flags do change the sequence (the comparison above is not vacuous).
for j in 2 3 4 5; do
    if cmp -s "$dir/real1.log" "$dir/real$j.log"; then
        echo "flag set $j allocates exactly as the default" >&2
        exit 1
    fi
done
# Checkpointing and early frees change memory, not arithmetic: the same losses as the default.
for j in 2 4; do
    grep '^step=' "$dir/real1.out" | cut -d' ' -f4-7 >"$dir/losses1.txt"
    grep '^step=' "$dir/real$j.out" | cut -d' ' -f4-7 >"$dir/losses$j.txt"
    if ! cmp "$dir/losses1.txt" "$dir/losses$j.txt"; then
        echo "flag set $j changed the losses" >&2
        exit 1
    fi
done
echo "checkpoint and early-free losses equal the default's"
