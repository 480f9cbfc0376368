#!/bin/sh
# report --memory-viz on the GAN trainer: the pickle reads back with python3's
# pickle, has segments, blocks and device_traces, and agrees with the JSON
# report (at the peak for a run that ends, at the fatal OOM for one that
# fails); the checker fails when given another run's report. Where PyTorch's
# venv is (SRC/.venv-torch), its torch/cuda/_memory_viz.py reads it too.
# usage: memviz_test.sh VRAMTRACE TRAIN CHECKER SRC
set -eu
VT=$1 TRAIN=$2 CHECK=$3 SRC=$4
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export VRAMTRACE_SIM_MEMORY=2GiB VRAMTRACE_QUIET=1
ARGS="--synthetic --memory-only --log-every 1000 --batch 64 --retain-history"
"$VT" run --sim=t4 -o "$W/peak.vtrace" -- "$TRAIN" $ARGS --steps 20 >/dev/null
"$VT" run --sim=t4 -o "$W/oom.vtrace" -- "$TRAIN" $ARGS --steps 60 >/dev/null 2>&1 || true
MV=
for f in "$SRC"/.venv-torch/lib/python3*/site-packages/torch/cuda/_memory_viz.py; do
    [ -f "$f" ] && MV=$f
done
[ -n "$MV" ] && echo "PyTorch's memory_viz: $MV" || echo "no PyTorch venv: pickle checks only"
for run in peak oom; do
    "$VT" report "$W/$run.vtrace" -q --json "$W/$run.json" --memory-viz "$W/$run.pickle"
    python3 "$CHECK" "$W/$run.pickle" "$W/$run.json" $MV || fail "$run: checker"
done
grep -q '"fatal":true' "$W/oom.json" || fail "the oom run did not fail"
# A wrong ground truth: the peak run's snapshot against the OOM run's report.
if python3 "$CHECK" "$W/peak.pickle" "$W/oom.json"; then fail "checker passed another run"; fi
# Output safety as for the other outputs; several processes are refused.
if "$VT" report "$W/peak.vtrace" -q --memory-viz "$W/peak.vtrace" 2>/dev/null; then
    fail "wrote onto the input"
fi
ln -s "$W/x" "$W/link.pickle"
if "$VT" report "$W/peak.vtrace" -q --memory-viz "$W/link.pickle" 2>/dev/null; then
    fail "wrote through a link"
fi
[ ! -e "$W/x" ] || fail "link followed"
if "$VT" report "$W/peak.vtrace" "$W/oom.vtrace" -q --memory-viz "$W/two.pickle" 2>"$W/err"; then
    fail "two processes into one snapshot"
fi
grep -q "one process" "$W/err" || fail "no message for two traces"
[ ! -e "$W/two.pickle" ] || fail "a snapshot was left for two traces"
echo "memviz_test: ok"
