#!/usr/bin/env bash
# real_test.sh VRAMTRACE REAL_PROG: record real_prog on the simulated device
# with `vramtrace run --sim`, then check what the report says about it.
set -u
VT=$1
PROG=$2
. "$(dirname "$0")/../lib.sh"

VRAMTRACE_SIM_LEDGER="$T/ledger.jsonl" \
    timeout 120 "$VT" run --sim=t4 -o "$T/real.vtrace" -- "$PROG" >"$T/run.out" 2>"$T/run.err" ||
    fail "run: exit $? ($(tail -3 "$T/run.err"))"
contains "$T/run.err" "vramtrace run: trace: $T/real.vtrace"
timeout 120 "$VT" report "$T/real.vtrace" --json "$T/real.json" --html "$T/real.html" \
    >"$T/report.txt" 2>"$T/report.err" || fail "report: exit $? ($(cat "$T/report.err"))"
contains "$T/report.txt" "104857600 bytes in 1 allocation was never freed"
contains "$T/report.txt" "at leak_site (.*real_prog.c:"
contains "$T/report.txt" 'iteration: NVTX range "train_step", 5 iterations'
contains "$T/report.txt" "1.00 MiB/iteration"
contains "$T/report.txt" "by grow_site\|at grow_site"
contains "$T/report.txt" "verdict: capacity"
contains "$T/real.json" '"function":"too_big"'
contains "$T/real.json" '"name":"Tesla T4"'
# The report's accounting against the sim's own ledger (tests/ledger).
if grep -q '"accounting"' "$T/real.json"; then
    python3 "$(dirname "$0")/../ledger/check_ledger.py" --ledger "$T/ledger.jsonl" \
        --report "$T/real.json" || fail "the report does not match the sim's ledger"
fi
timeout 120 "$VT" check "$T/real.vtrace" --no-oom >/dev/null
[ $? -eq 1 ] || fail "check --no-oom should fail"
[ $fails -eq 0 ] && echo "real program reported as expected"
[ $fails -eq 0 ] || { cat "$T/report.txt"; }
exit $((fails > 0))
