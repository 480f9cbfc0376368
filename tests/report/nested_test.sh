#!/usr/bin/env bash
# nested_test.sh VRAMTRACE NESTED_PROG: iterations one level down (report/growth.c,
# interpose/iterfit.c). Ground truth: nested_prog keeps exactly 1 MiB per "step"
# (outer) or 4 MiB (repeat). The report and the preload's exit line must both name
# "step" inside "train", and must not take the ranges inside a step that repeats
# (2 steps of 4 "micro" ranges: no iterations yet); ranges named by their step's number
# ("iteration0", "iteration1", ...) are one range "iteration", while their numbers
# keep increasing; so are names of several numbers ("epoch 0 step 4", "epoch 1
# step 0": "epoch <N> step"; "step 3/15": "step <N>").
set -u
VT=$1
PROG=$2
. "$(dirname "$0")/../lib.sh"

# run NAME ARGS...: record, report (text + JSON); exit line in $T/NAME.exit
run() {
    local name=$1
    shift
    timeout 120 "$VT" run --sim=t4 -o "$T/$name.vtrace" -- "$PROG" "$@" >/dev/null 2>"$T/$name.err" ||
        fail "$name: run exit $? ($(tail -3 "$T/$name.err"))"
    grep '^vramtrace: GROWING' "$T/$name.err" >"$T/$name.exit" || true
    timeout 120 "$VT" report "$T/$name.vtrace" --json "$T/$name.json" >"$T/$name.txt" 2>&1 ||
        fail "$name: report exit $?"
}

# expect NAME RANGE INSIDE COUNT BYTES_PER_ITERATION [numbered] (RANGE "": no NVTX iteration)
expect() {
    python3 - "$T/$1.json" "$T/$1.exit" "$2" "$3" "$4" "$5" "${6:-}" <<'PY'

import json, sys
rep = json.load(open(sys.argv[1]))
exit_line = open(sys.argv[2]).read().strip()
rng, inside, count, rate = sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
numbered = sys.argv[7] == "numbered"
it, tg = rep["iteration"], rep["total_growth"]
print(f"iteration {it['range']!r} inside {it['inside']!r}, {it['count']}, "
      f"{tg['bytes_per_iteration']:.0f} B/iteration; exit line {exit_line[:90]!r}")
if not rng:
    assert it["kind"] != "nvtx_range", it
    assert not exit_line, exit_line
    sys.exit(0)
assert (it["range"], it["inside"], it["count"], it["numbered"]) == (rng, inside, count,
                                                                   numbered), it
assert abs(tg["bytes_per_iteration"] - rate) < 1, tg
assert rep["verdict"]["kind"] == "growing", rep["verdict"]["kind"]
want = f"vramtrace: GROWING: +{rate / 2**20:.2f} MiB per {rng} (R^2 1.000 over {count} {rng}s)"
assert exit_line.startswith(want), (exit_line, want)
PY
    local rc=$?
    [ $rc -eq 0 ] || fail "$1"
    return $rc
}

run outer outer 20
expect outer step train 20 1048576
grep -q 'iteration: NVTX range "step" (inside "train"' "$T/outer.txt" || fail "outer: text report"
run repeat repeat 10
expect repeat step "" 10 4194304
run died repeat 2
expect died "" "" 0 0
# each step's range named by its number: one range, "iteration"
run numbered numbered 15
expect numbered iteration "" 15 1048576 numbered
grep -q 'iteration: NVTX range "iteration<N>" (ranges numbered by step), 15 iterations' \
    "$T/numbered.txt" || fail "numbered: text report"
# names of several numbers ending in the step's: one range while they increase
# (until session 26 "epoch 1 step 0" began a range of its own: 5 steps of 15)
run epochs epochs 15
expect epochs "epoch <N> step" "" 15 1048576 numbered
grep -q 'iteration: NVTX range "epoch <N> step<N>" (ranges numbered by step), 15 iterations' \
    "$T/epochs.txt" || fail "epochs: text report"
run fraction fraction 15
expect fraction "step <N>" "" 15 1048576 numbered
# 20 one-off ranges before the loop: "step" is still counted, by the report
# and the exit line (until session 26 both kept the first names: none after 8
# such phases for the exit line, 16 for the report)
run phases phases 15
expect phases step "" 15 1048576
# 12 top-level names each step, more than the tables hold: the first stay, so
# "part_a" (the first) still repeats (a table that gave any one-off name's
# place away would have had each make way for the next before its second end)
run cycle cycle 15
expect cycle part_a "" 15 1048576
# numbered names that come round again each step ("layer0" to "layer3"): not by
# step; they count apart from the second "layer0" on
run layers layers 10
expect layers layer0 "" 9 1048576

# The checks fail on a wrong input: the outer run's report read as the repeat run's.
cp "$T/outer.json" "$T/wrong.json"
cp "$T/repeat.exit" "$T/wrong.exit"
if (expect wrong step train 20 1048576) >/dev/null 2>&1; then
    fail "a wrong exit line passed"
fi
[ $fails -eq 0 ] && echo "nested: ok" || echo "nested: $fails failure(s)"
exit $((fails > 0))
