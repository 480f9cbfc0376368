#!/bin/sh
# edges_test.sh VRAMTRACE TRAIN SIMDIR: vramtrace run's clear edges.
# 1. --sim=PROFILE not one of the sim's profiles: an error listing them, the
#    program never starts; a known profile (any case) runs.
# 2. No --sim and no CUDA driver: one line naming --sim and no empty trace;
#    the same run with the simulated driver on the library path keeps its
#    trace and prints no such line (skipped where a real driver is present).
set -eu
VT=$1
TRAIN=$2
SIMDIR=$3
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
if "$VT" run --sim=h100 -- sh -c "touch '$D/ran'" 2>"$D/err"; then fail "--sim=h100 accepted"; fi
[ ! -e "$D/ran" ] || fail "--sim=h100: the program ran"
[ "$(wc -l <"$D/err")" -eq 1 ] || fail "--sim=h100: not one line: $(cat "$D/err")"
for p in t4 a100-40gb a100-80gb h100-80gb; do
    grep -q "unknown --sim profile 'h100'.* $p\b" "$D/err" || fail "--sim=h100: $p not listed: $(cat "$D/err")"
done
"$VT" run --sim=H100-80GB -o "$D/h.vtrace" -- sh -c "touch '$D/ran'" 2>"$D/err" ||
    fail "--sim=H100-80GB refused: $(cat "$D/err")"
[ -e "$D/ran" ] || fail "--sim=H100-80GB: the program did not run"

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    echo "edges: a CUDA driver is installed: the no-driver part is skipped"
    exit 0
fi
env -u LD_LIBRARY_PATH "$VT" run -o "$D/n.vtrace" -- "$TRAIN" --memory-only --synthetic --steps 1 \
    >/dev/null 2>"$D/nerr" || true
[ ! -e "$D/n.vtrace" ] || fail "no driver: an empty trace was left"
[ "$(grep -c -- '--sim' "$D/nerr")" -eq 1 ] || fail "no driver: no single line naming --sim: $(cat "$D/nerr")"
LD_LIBRARY_PATH=$SIMDIR "$VT" run -o "$D/s.vtrace" -- "$TRAIN" --memory-only --synthetic --steps 1 \
    >/dev/null 2>"$D/serr" || fail "simulated driver: the run failed: $(tail -3 "$D/serr")"
[ -s "$D/s.vtrace" ] || fail "simulated driver: no trace"
if grep -q -- '--sim' "$D/serr"; then fail "simulated driver: the --sim hint was printed"; fi
echo "edges: ok"
