#!/usr/bin/env bash
# devices_test.sh VRAMTRACE DEVICES_PROG: growth projected per device
# (report/model.c, interpose/iterfit.c). Ground truth: devices_prog run on
# two simulated T4s until an allocation fails: the step and device where it
# does (device 1, where 64 MiB are kept each step; device 0 holds 8 GiB that
# do not grow). A run of 30 steps must project exactly that step on that
# device in the report (JSON and headline), and the preload's exit line,
# which does not see a step's temporaries, within 10 % on that device. Before,
# both projected from the two devices' bytes summed against one device's
# room: step 100 for a failure in step 232. A wrong truth must fail the check.
set -u
VT=$1
PROG=$2
. "$(dirname "$0")/../lib.sh"
export VRAMTRACE_SIM_DEVICES=2

timeout 300 "$VT" run --sim=t4 -o "$T/long.vtrace" -- "$PROG" 1000 >"$T/long.out" 2>"$T/long.err" ||
    fail "the long run: exit $? ($(tail -3 "$T/long.err"))"
truth=$(sed -n 's/^out of memory in step \([0-9]*\) on device \([0-9]*\)$/\1 \2/p' "$T/long.out")
[ -n "$truth" ] || fail "the long run did not run out of memory: $(tail -2 "$T/long.out")"
echo "truth: out of memory in step ${truth% *} on device ${truth#* }"

timeout 120 "$VT" run --sim=t4 -o "$T/short.vtrace" -- "$PROG" 30 >"$T/short.out" 2>"$T/short.err" ||
    fail "the short run: exit $? ($(tail -3 "$T/short.err"))"
grep '^vramtrace: GROWING' "$T/short.err" >"$T/exit.txt" || true
timeout 120 "$VT" report "$T/short.vtrace" --json "$T/short.json" >"$T/short.txt" 2>&1 ||
    fail "report: exit $?"

# check STEP DEVICE: the report's and the exit line's projections against them
check() {
    python3 - "$T/short.json" "$T/exit.txt" "$1" "$2" <<'PY'
import json, re, sys
rep = json.load(open(sys.argv[1]))
exit_line = open(sys.argv[2]).read().strip()
step, device = int(sys.argv[3]), int(sys.argv[4])
tg, v = rep["total_growth"], rep["verdict"]
print(f"report: out of memory projected at step {tg['projected_oom_iteration']} on device "
      f"{tg.get('projected_oom_device')}; headline {v['text'][:110]!r}")
print(f"exit line: {exit_line!r}")
assert (tg["projected_oom_iteration"], tg["projected_oom_device"]) == (step, device), tg
assert f"out of memory projected at step {step} on device {device}" in v["text"], v["text"]
m = re.search(r"out of memory projected at step (\d+) on device (\d+)", exit_line)
assert m and int(m.group(2)) == device, exit_line
assert abs(int(m.group(1)) - step) <= step / 10, (m.group(1), step)
PY
}
if [ -n "$truth" ]; then
    check ${truth% *} ${truth#* } || fail "the projections differ from the step that ran out"
    # a wrong truth must fail: one step later, and the other device
    if (check $((${truth% *} + 1)) ${truth#* }) >/dev/null 2>&1; then
        fail "a projection one step off passed"
    fi
    if (check ${truth% *} 0) >/dev/null 2>&1; then
        fail "a projection on the other device passed"
    fi
fi
echo "devices_test: $fails failures"
exit $((fails > 0))
