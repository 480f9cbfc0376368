#!/bin/sh
# nvtx_oom.sh VRAMTRACE PROGRAM: t_nvtx_oom under `vramtrace run` must finish
# (a deadlock between the exit line's fit and a failure's memory sample hung
# corpus.random_killed once) and its trace hold every failed allocation.
VT=$1
PROG=$2
. "$(dirname "$0")/../lib.sh"
VRAMTRACE_QUIET=1 timeout 60 "$VT" run --sim=t4 -o "$T/t.vtrace" -- "$PROG" 1000 >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc (124: it hung) $(tail -3 "$T/err")"
contains "$T/out" "^done$"
"$VT" report "$T/t.vtrace" --json "$T/t.json" -q 2>"$T/report.err" || fail "report: $(cat "$T/report.err")"
python3 - "$T/t.json" <<'PY' || fail "the trace lacks failures"
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
sys.exit(0 if t["failed_allocations"] == 2 * 1000 else f"failed allocations {t['failed_allocations']}")
PY
[ $fails -eq 0 ] && echo "NVTX ranges and failed allocations at once: no deadlock"
exit $((fails > 0))
