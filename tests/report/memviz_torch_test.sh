#!/bin/sh
# --memory-viz of a PyTorch run on the simulated T4 against PyTorch's own
# torch.cuda.memory._snapshot() of the same run (memviz_torch_cmp.py); a
# snapshot of another run must differ. Exit 77 (skipped) without PyTorch.
# usage: memviz_torch_test.sh VRAMTRACE TORCH_PYTHON DIR
set -eu
VT=$1 PY=$2 DIR=$3
"$PY" -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)" 2>/dev/null || { echo "no PyTorch at $PY: skipped"; exit 77; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export VRAMTRACE_QUIET=1
"$VT" run --sim=t4 -o "$W/t.vtrace" -- "$PY" "$DIR/memviz_torch_prog.py" "$W/torch.pickle" \
    >/dev/null 2>&1 || fail "the PyTorch program failed"
"$VT" report "$W/t.vtrace" -q --memory-viz "$W/ours.pickle"
python3 "$DIR/memviz_torch_cmp.py" "$W/ours.pickle" "$W/torch.pickle" || fail "differs"
# Another run's ground truth (one more step, so one more segment) must differ.
"$VT" run --sim=t4 -o "$W/u.vtrace" -- "$PY" "$DIR/memviz_torch_prog.py" "$W/other.pickle" 4 \
    >/dev/null 2>&1 || fail "the second PyTorch program failed"
if python3 "$DIR/memviz_torch_cmp.py" "$W/ours.pickle" "$W/other.pickle"; then
    fail "the comparison passed another run's snapshot"
fi
echo "memviz_torch_test: ok"
