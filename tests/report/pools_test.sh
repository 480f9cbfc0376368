#!/usr/bin/env bash
# pools_test.sh VRAMTRACE POOLS_PROG VTRACE_H: a program's own stream-ordered
# pools, summed per device (report/pool.c; the preload samples them at NVTX
# range ends, interpose/poolstat.c). Ground truth: pools_prog's own query of
# its pools' reserved bytes (cudaMemPoolAttrReservedMemCurrent, summed).
# Up to VT_MAX_POOLS (trace/vtrace.h) pools the device line's "pools
# reserved" must be that sum; past it the recorder's note must say that the
# pools past them are not sampled. The check is also run against the sum of the first
# 8 pools (the cap until session 26) and must reject it.
set -u
VT=$1
PROG=$2
VTRACE_H=$3
. "$(dirname "$0")/../lib.sh"
CAP=$(sed -n 's/^#define VT_MAX_POOLS \([0-9]*\).*/\1/p' "$VTRACE_H")
[ -n "$CAP" ] || fail "no VT_MAX_POOLS in $VTRACE_H"

# run N: record and report pools_prog N (JSON in $T/N.json, truth in $T/N.out)
run() {
    VRAMTRACE_SIM_MEMORY=64GiB timeout 120 "$VT" run --sim=t4 -o "$T/$1.vtrace" -- "$PROG" "$1" \
        >"$T/$1.out" 2>"$T/$1.err" || fail "pools_prog $1: exit $? ($(tail -2 "$T/$1.err"))"
    timeout 120 "$VT" report "$T/$1.vtrace" --json "$T/$1.json" >"$T/$1.txt" 2>&1 ||
        fail "report $1: exit $?"
}

# check N [first K pools only]: the report's pools reserved against the truth
check() {
    python3 - "$T/$1.json" "$T/$1.out" "${2:-0}" <<'PY'
import json, sys
rep, out, first = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), int(sys.argv[3])
truth = int(out.split("pools reserved ")[1])
if first:  # a wrong truth: only the first pools' (the program allocates 8-64 MiB by pool)
    truth = truth * first // int(sys.argv[1].rsplit("/", 1)[1].split(".")[0])
got = rep["devices"][0]["pool_reserved_peak_bytes"]
print(f"pools reserved: vramtrace {got}, the program's pools {truth}")
assert got == truth, (got, truth)
PY
}

for n in 3 12 "$CAP"; do
    run "$n"
    check "$n" || fail "$n pools: the pools' reserved bytes differ"
done
if check 12 8 >/dev/null 2>&1; then
    fail "the check accepted the first 8 pools' sum for 12"
fi
# past the cap: the report says how it counts them
over=$((CAP + 6))
run "$over"
contains "$T/$over.txt" "note: more than $CAP stream-ordered pools: the pools past them"
[ $fails -eq 0 ] && echo "pools: ok" || echo "pools: $fails failure(s)"
exit $((fails > 0))
