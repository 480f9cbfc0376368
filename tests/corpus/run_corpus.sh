#!/bin/sh
# run_corpus.sh: run one corpus program under the preload on the simulated
# device with the sim's ledger on, render the trace with `vramtrace report
# --json`, and hold the report's accounting and device peaks against the ledger
# (tests/ledger/check_ledger.py). The program itself must exit 0: it checks
# its own CUDA results.
#
# usage: run_corpus.sh VRAMTRACE PRELOAD SIMDIR CHECKER OUTDIR MODE -- PROGRAM ARGS...
# MODE: sim       LD_LIBRARY_PATH=SIMDIR
#       nodriver  a directory holding only the simulated libcudart.so.13: the
#                 runtime finds no libcuda.so.1 (its ledger copy writes)
# Extra environment (VRAMTRACE_SIM_MEMORY ...) comes from ctest.
set -u
tool=$1 preload=$2 simdir=$3 checker=$4 outdir=$5 mode=$6
shift 6
[ "${1:-}" = "--" ] && shift
fail() { echo "run_corpus: FAIL: $*" >&2; exit 1; }
rm -rf "$outdir" && mkdir -p "$outdir" || exit 1
libdir=$simdir
if [ "$mode" = nodriver ]; then
    libdir=$outdir/nodriver
    mkdir -p "$libdir" && cp "$simdir/libcudart.so.13" "$libdir/" || exit 1
fi
ledger=$outdir/ledger.jsonl trace=$outdir/trace.vtrace report=$outdir/report.json
# CORPUS_RANGES_CHECK=1 (random.c): the program records each allocation's
# NVTX range in CORPUS_RANGES, checked below.
[ -n "${CORPUS_RANGES_CHECK:-}" ] && export CORPUS_RANGES="$outdir/ranges.txt"
# CORPUS_CAPTURED_CHECK=1 (graphs_random.c): the program records whether each
# allocation was made inside its thread's capture, in CORPUS_CAPTURED.
[ -n "${CORPUS_CAPTURED_CHECK:-}" ] && export CORPUS_CAPTURED="$outdir/captured.txt"
env VRAMTRACE_SIM_LEDGER="$ledger" VRAMTRACE_OUTPUT="$trace" LD_PRELOAD="$preload" \
    LD_LIBRARY_PATH="$libdir" "$@" >"$outdir/stdout" 2>"$outdir/stderr"
st=$?
cat "$outdir/stderr" >&2
[ $st -eq 0 ] || fail "the program exited with $st"
# The preload must make no CUDA call in exit()
# (sim/README.md, "Exit"; a real driver may crash there).
! grep -q "vramtrace-sim: a driver call at exit" "$outdir/stderr" ||
    fail "a CUDA call at exit (stderr above)"
[ -s "$ledger" ] || fail "the sim wrote no ledger"
"$tool" report "$trace" --json "$report" --quiet >"$outdir/report.txt" 2>&1 ||
    { cat "$outdir/report.txt" >&2; fail "vramtrace report failed"; }
python3 "$checker" --ledger "$ledger" --report "$report" --devices --trace "$trace"
st=$?
[ $st -eq 0 ] || fail "the report does not match the ledger (check_ledger exit $st; $outdir)"
# The preload's stderr against the ledger too: its OOM blocks (free of
# total, the graph memory pool) and its exit summary; the check must catch
# a block's free bytes sampled at another moment and one allocation more in
# the summary (tests/ledger/check_stderr.py).
stderr_check=$(dirname "$checker")/check_stderr.py
python3 "$stderr_check" --ledger "$ledger" --stderr "$outdir/stderr" ||
    fail "the preload's stderr does not match the ledger ($outdir)"
if grep -q "^vramtrace: OUT OF MEMORY: .* on device .*, free " "$outdir/stderr"; then
    python3 "$stderr_check" --ledger "$ledger" --stderr "$outdir/stderr" --perturb >/dev/null
    st=$? # 3: no block alone in its window (threads), nothing compared to move
    [ $st -eq 1 ] || [ $st -eq 3 ] ||
        fail "check_stderr.py --perturb did not catch the moved free bytes"
fi
# and a block's live line one allocation off (3: every block's failure was
# made by more than one thread, nothing compared)
if grep -q "^vramtrace: OUT OF MEMORY: " "$outdir/stderr"; then
    python3 "$stderr_check" --ledger "$ledger" --stderr "$outdir/stderr" --perturb-live >/dev/null
    st=$?
    [ $st -eq 1 ] || [ $st -eq 3 ] ||
        fail "check_stderr.py --perturb-live did not catch the extra live allocation"
fi
if grep -q "^vramtrace: device [0-9]*: peak reserved" "$outdir/stderr"; then
    python3 "$stderr_check" --ledger "$ledger" --stderr "$outdir/stderr" --perturb-exit >/dev/null
    [ $? -eq 1 ] || fail "check_stderr.py --perturb-exit did not catch the extra allocation"
fi
# CORPUS_MEMVIZ=1 (a run whose failures the report lists all): the
# --memory-viz snapshot at the fatal failure against the ledger too
# (tests/ledger/check_memviz.py).
if [ -n "${CORPUS_MEMVIZ:-}" ]; then
    "$tool" report "$trace" --memory-viz "$outdir/snapshot.pickle" --quiet >>"$outdir/report.txt" 2>&1 ||
        { cat "$outdir/report.txt" >&2; fail "vramtrace report --memory-viz failed"; }
    python3 "$(dirname "$checker")/check_memviz.py" --ledger "$ledger" \
        --snapshot "$outdir/snapshot.pickle" --report "$report" ||
        fail "the memory_viz snapshot does not match the ledger ($outdir)"
    # and the check catches a ledger allocation moved by 512 bytes
    python3 "$(dirname "$checker")/check_memviz.py" --ledger "$ledger" --perturb \
        --snapshot "$outdir/snapshot.pickle" --report "$report" >/dev/null
    [ $? -eq 1 ] || fail "check_memviz.py --perturb did not catch the moved allocation"
fi
if [ -n "${CORPUS_RANGES_CHECK:-}" ]; then
    python3 "$(dirname "$checker")/check_ranges.py" --ledger "$ledger" --ranges "$CORPUS_RANGES" \
        --report "$report" || fail "the peak by NVTX range does not match ($outdir)"
    python3 "$(dirname "$checker")/check_ranges.py" --ledger "$ledger" --ranges "$CORPUS_RANGES" \
        --report "$report" --perturb >/dev/null
    [ $? -eq 1 ] || fail "check_ranges.py --perturb did not catch the moved allocation"
fi
if [ -n "${CORPUS_CAPTURED_CHECK:-}" ]; then
    python3 "$(dirname "$checker")/check_captured.py" --ledger "$ledger" \
        --captured "$CORPUS_CAPTURED" --report "$report" ||
        fail "the bytes made during captures do not match ($outdir)"
    python3 "$(dirname "$checker")/check_captured.py" --ledger "$ledger" \
        --captured "$CORPUS_CAPTURED" --report "$report" --perturb >/dev/null
    [ $? -eq 1 ] || fail "check_captured.py --perturb did not catch the allocation taken out"
fi
# CORPUS_EXPECT="PATH=VALUE ..." (graphs.c): report JSON members the
# program's source fixes (PATH: keys and list indices joined by dots).
if [ -n "${CORPUS_EXPECT:-}" ]; then
    python3 - "$report" $CORPUS_EXPECT <<'PY' || fail "the report's numbers are not the program's ($outdir)"
import json, sys
rep, bad = json.load(open(sys.argv[1])), 0
for want in sys.argv[2:]:
    path, value = want.split("=", 1)
    got = rep
    for k in path.split("."):
        got = got[int(k)] if isinstance(got, list) else got.get(k)
    print(f"{path}: report {got}, program {value}")
    bad += str(got) != value
sys.exit(1 if bad else 0)
PY
fi
echo "run_corpus: ok ($(basename "$1"))"
