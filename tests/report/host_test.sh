#!/usr/bin/env bash
# host_test.sh VRAMTRACE HOST_PROG: growth of pinned host memory over the
# iterations (report/model.c host_growth). Ground truth: the pinned bytes
# host_prog holds at each step's end, which it prints. The report's
# host_growth must be the least-squares fit of them (slope within 1 B, R^2
# within 1e-6), and the headline must say that pinned host memory grows;
# with the pinned memory freed each step it must not. Before, a pinned
# leak read "no growth". A wrong truth must fail the check.
set -u
VT=$1
PROG=$2
. "$(dirname "$0")/../lib.sh"

# run NAME MODE: record 30 steps, JSON report
run() {
    timeout 120 "$VT" run --sim=t4 -o "$T/$1.vtrace" -- "$PROG" 30 "$2" >"$T/$1.out" 2>"$T/$1.err" ||
        fail "run $1: exit $? ($(tail -3 "$T/$1.err"))"
    timeout 120 "$VT" report "$T/$1.vtrace" -q --json "$T/$1.json" 2>&1 || fail "report $1: exit $?"
}
# check NAME [SHIFT]: host_growth against the printed truth (SHIFT: bytes
# added to the last step's truth: a wrong one)
check() {
    python3 - "$T/$1.json" "$T/$1.out" "${2:-0}" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
y = [int(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("held ")]
y[-1] += int(sys.argv[3])
n = len(y)
xs = list(range(1, n + 1))
mx, my = sum(xs) / n, sum(y) / n
sxx = sum((x - mx) ** 2 for x in xs)
sxy = sum((x - mx) * (v - my) for x, v in zip(xs, y))
syy = sum((v - my) ** 2 for v in y)
slope = sxy / sxx
r2 = sxy * sxy / (sxx * syy) if syy else 0.0
h, text = rep["host_growth"], rep["verdict"]["text"]
print(f"truth: {slope:.1f} B/step, R^2 {r2:.6f}; report: {h['bytes_per_iteration']:.1f} B/step, "
      f"R^2 {h['r2']:.6f}; headline {text[text.find('growth') - 25:][:120]!r}")
assert abs(h["bytes_per_iteration"] - slope) <= 1 and abs(h["r2"] - r2) <= 1e-6, (h, slope, r2)
grows = slope >= 1 and r2 >= 0.8
assert ("pinned host memory grows" in text) == grows, text
PY
}
run keep keep
check keep || fail "kept pinned memory: host growth"
run free free
check free || fail "freed pinned memory: host growth"
if (check keep 7340032) >/dev/null 2>&1; then
    fail "a wrong truth (the last step 7 MiB off) passed"
fi
echo "host_test: $fails failures"
exit $((fails > 0))
