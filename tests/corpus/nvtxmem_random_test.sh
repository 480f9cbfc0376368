#!/bin/sh
# nvtxmem_random_test.sh VRAMTRACE PRELOAD SIMDIR CHECKER PROGRAM SEED: a
# random caching allocator annotated with the NVTX Mem API
# (nvtxmem_random.c) under the preload on two simulated devices; the
# report's allocated bytes must be the program's own (its CORPUS_TRUTH
# file): each device's peak_allocated_bytes, and each out-of-memory
# failure's device and live_allocated_bytes, in order. Its accounting of
# the cudaMalloc calls is held against the sim's ledger (check_ledger.py,
# without --devices: the ledger knows no heaps, so its device peaks are
# the reserved ones). The check is also shown failing on a truth one byte
# off.
# The preload's stderr (OOM blocks, exit summary) is held against the
# ledger too (check_stderr.py).
set -u
VT=$1 PRELOAD=$2 SIMDIR=$3 CHECKER=$4 PROG=$5 SEED=$6
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
env VRAMTRACE_SIM_DEVICES=2 VRAMTRACE_SIM_MEMORY=1GiB VRAMTRACE_SIM_LEDGER="$D/ledger.jsonl" \
    VRAMTRACE_OUTPUT="$D/trace.vtrace" CORPUS_TRUTH="$D/truth.json" \
    LD_PRELOAD="$PRELOAD" LD_LIBRARY_PATH="$SIMDIR" "$PROG" "$SEED" >"$D/stdout" 2>"$D/stderr" ||
    { cat "$D/stderr" >&2; fail "the program failed"; }
cat "$D/stdout"
"$VT" report "$D/trace.vtrace" --json "$D/report.json" --quiet >"$D/report.txt" 2>&1 ||
    { cat "$D/report.txt" >&2; fail "vramtrace report failed"; }
python3 "$CHECKER" --ledger "$D/ledger.jsonl" --report "$D/report.json" ||
    fail "the accounting does not match the ledger"
# the preload's OOM blocks and exit summary (its peak reserved: every
# cudaMalloc, segments too) against the ledger as in run_corpus.sh
python3 "$(dirname "$CHECKER")/check_stderr.py" --ledger "$D/ledger.jsonl" --stderr "$D/stderr" ||
    fail "the preload's stderr does not match the ledger"

# check TRUTH REPORT [PERTURB]: exit 1 with the mismatches
check() {
    python3 - "$@" <<'PY'
import json, sys
truth, rep = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if len(sys.argv) > 3:
    truth["peak_allocated"][0] += 1
bad = []
got = {d["id"]: d["peak_allocated_bytes"] for d in rep["devices"]}
for dev, want in enumerate(truth["peak_allocated"]):
    if got.get(dev, 0) != want:
        bad.append(f"device {dev}: peak_allocated_bytes: report {got.get(dev)}, program {want}")
ooms = [(o["device"], o["live_allocated_bytes"]) for o in rep["ooms"] if o["error"] == 2]
want = [tuple(f) for f in truth["fails"]]
if len(ooms) != len(want):
    bad.append(f"out-of-memory failures: report {len(ooms)}, program {len(want)}")
for n, (g, w) in enumerate(zip(ooms, want), 1):
    if g != w:
        bad.append(f"failure {n}: (device, live_allocated_bytes): report {g}, program {w}")
for b in bad[:10]:
    print("nvtxmem_random:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}
check "$D/truth.json" "$D/report.json" || fail "the report's allocated bytes are not the program's"
check "$D/truth.json" "$D/report.json" perturb 2>/dev/null && fail "the check passed a peak one byte off"
echo "nvtxmem_random_test: ok: seed $SEED"
