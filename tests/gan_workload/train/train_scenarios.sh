#!/bin/sh
# Every scenario flag runs a few --memory-only steps on the simulated device; the leak flag
# grows, a too large batch ends with the allocator's OOM message and exit status 2, and a
# missing dataset names its Debian package.
# usage: train_scenarios.sh TRAIN SIM_LIB_DIR WORK_DIR
set -eu
train=$1 sim=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
run() {
    LD_LIBRARY_PATH="$sim" "$train" --memory-only --steps 4 --batch 16 --log-every 1 "$@"
}
for flags in "--batch 32" "--image-size 64 --channels 3" "--accum-steps 3" "--checkpoint" \
    "--fp16" "--empty-cache" "--retain-history" "--preload-dataset" "--vary-batch" \
    "--no-zero-grad" "--early-free" "--allocator direct" "--image-size 256 --batch 4"; do
    echo "== $flags"
    # shellcheck disable=SC2086
    run $flags >"$dir/out.txt"
    tail -n 1 "$dir/out.txt"
done
# --retain-history leaks every step: allocated grows step after step.
run --retain-history --steps 6 | awk -F'allocated=' '/^step=/ { split($2, a, " ");
    if (prev != "" && a[1] + 0 <= prev + 0) bad = 1; prev = a[1] } END { exit bad }'
# Without it, allocated is the same at steps 3 and 6 (nothing leaks).
run --steps 6 | awk -F'allocated=' '/^step=(3|6)\// { split($2, a, " "); v[n++] = a[1] }
    END { exit !(n == 2 && v[0] == v[1]) }'
# 256x256 at batch 1024 does not fit a 2 GiB device: status 2 and PyTorch's message.
set +e
VRAMTRACE_SIM_MEMORY=2GiB run --image-size 256 --batch 1024 >"$dir/oom.out" 2>"$dir/oom.err"
rc=$?
set -e
cat "$dir/oom.err"
test "$rc" -eq 2
grep -q "CUDA out of memory" "$dir/oom.err"
# A missing dataset: exit 1 and the package's name.
set +e
LD_LIBRARY_PATH="$sim" "$train" --steps 1 --data-dir /nonexistent 2>"$dir/nodata.err"
rc=$?
set -e
test "$rc" -eq 1
grep -q "dataset-fashion-mnist" "$dir/nodata.err"
# A bad value: exit 1 with a message.
if "$train" --image-size 100 2>"$dir/bad.err"; then exit 1; fi
grep -q "image-size" "$dir/bad.err"
