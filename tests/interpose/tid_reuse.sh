#!/bin/sh
# tid_reuse.sh VRAMTRACE PROGRAM [--wrong]: t_tid_reuse under `vramtrace run`
# in a PID namespace of its own whose thread ids wrap at 1000, so that a
# thread id comes back within the run; the report's range of each byte at
# the peak and its recovered failures are held against what the program's
# source says ("expect:" line), a thread that names itself
# (nvtxNameOsThread) with a range open included. --wrong holds them against what the report
# said before it knew of reused ids (the new thread's bytes in the dead
# thread's range, its allocation a retry of the dead thread's failure): that
# check must fail. Exit 77 (skipped) where no such namespace can be made
# (an older kernel, where pid_max is not the namespace's, refuses the write
# in a user namespace rather than lower the machine's).
VT=$1
PROG=$2
WRONG=${3:-}
. "$(dirname "$0")/../lib.sh"
ns() { unshare --user --map-root-user --pid --fork --mount-proc "$@"; }
if ! ns sh -c 'echo 1000 > /proc/sys/kernel/pid_max' 2>"$T/ns.err"; then
    echo "SKIP: no PID namespace with its own pid_max here: $(cat "$T/ns.err")"
    exit 77
fi
VRAMTRACE_QUIET=1 ns sh -c 'echo 1000 > /proc/sys/kernel/pid_max && exec "$0" run --sim=t4 -o "$1" -- "$2"' \
    "$VT" "$T/t.vtrace" "$PROG" >"$T/out" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc: $(cat "$T/out") $(tail -3 "$T/err")"
contains "$T/out" "^reused TID after"
"$VT" report "$T/t.vtrace" --json "$T/t.json" -q 2>"$T/report.err" || fail "report: $(cat "$T/report.err")"
python3 - "$T/t.json" "$T/out" "$WRONG" <<'PY' || fail "the report differs from the program's source"
import json, re, sys
rep = json.load(open(sys.argv[1]))
want = dict(re.findall(r"(\w+)=(\d+)", next(l for l in open(sys.argv[2]) if l.startswith("expect:"))))
want = {k: int(v) for k, v in want.items()}
if sys.argv[3] == "--wrong":  # what the report said before it knew of reused ids
    want = {"no_range": 0, "dead_range": want["no_range"] + want["dead_range"],
            "named_range": want["named_range"], "recovered": 1}
phases = {p["range"]: p["bytes"] for p in rep["phases"]}
got = {"no_range": phases.get("(no range)", 0), "dead_range": phases.get("dead_range", 0),
       "named_range": phases.get("named_range", 0),
       "recovered": rep["totals"]["recovered_failed_allocations"]}
bad = [f"{k}: report {got[k]}, source {want[k]}" for k in want if got[k] != want[k]]
print("\n".join(bad) or f"as the source says: {got}")
sys.exit(1 if bad else 0)
PY
[ $fails -eq 0 ] && echo "a reused thread id: ranges and retries as the program's source says"
exit $((fails > 0))
