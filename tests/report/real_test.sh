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
# Every stack ends at main: the C library's start-up frames below it
# (__libc_start_call_main, __libc_start_main_impl, _start) are not shown.
python3 - "$T/real.json" <<'PY' || fail "a stack goes below main"
import json, sys
def stacks(o):
    if isinstance(o, dict):
        st = o.get("stack")
        if isinstance(st, list) and st and isinstance(st[0], dict):
            yield [f.get("function", "") for f in st]
        for v in o.values():
            yield from stacks(v)
    elif isinstance(o, list):
        for v in o:
            yield from stacks(v)
seen = list(stacks(json.load(open(sys.argv[1]))))
bad = [s[-3:] for s in seen if s[-1] != "main"]
print(f"{len(seen)} stacks, {len(bad)} not ending at main: {bad[:3]}")
sys.exit(1 if bad or not seen else 0)
PY
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
