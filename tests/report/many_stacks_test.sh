#!/usr/bin/env bash
# many_stacks_test.sh VRAMTRACE MANY_STACKS_PROG REPORT_H: a table of more
# distinct stacks than the report lists (VR_MAX_MERGED_SITES, read from
# report.h) counts the rest as left out, in the text, JSON and HTML reports.
# Ground truth: many_stacks_prog's source (2^15 stacks, sizes by s % 4, the
# 2048 B class freed before exit); the counts, bytes and "... N more" lines
# must be what that source implies; `vramtrace diff` against a run of 2^14
# stacks must say which run's tables are partial. The checker is also run
# against a wrong truth (the freed class counted as leaked) and must reject
# it.
set -u
VT=$1
PROG=$2
REPORT_H=$3
. "$(dirname "$0")/../lib.sh"
DEPTH=15

timeout 120 "$VT" run --sim=t4 -o "$T/m.vtrace" -- "$PROG" $DEPTH >/dev/null 2>"$T/run.err" ||
    fail "run exit $? ($(tail -3 "$T/run.err"))"
timeout 300 "$VT" report "$T/m.vtrace" --top 10 --json "$T/m.json" --html "$T/m.html" \
    --folded "$T/m.folded" --chrome "$T/m.chrome" >"$T/m.txt" 2>"$T/report.err" ||
    fail "report exit $? ($(tail -3 "$T/report.err"))"

# check [wrong]: the report against the truth (the freed class leaked when wrong)
check() {
    python3 - "$T/m.json" "$T/m.txt" "$T/m.html" "$REPORT_H" $DEPTH "${1:-}" <<'PY'
import json, re, sys
jpath, tpath, hpath, report_h, depth, wrong = sys.argv[1:7]
rep, text, html = json.load(open(jpath)), open(tpath).read(), open(hpath).read()
cap = int(re.search(r"#define VR_MAX_MERGED_SITES (\d+)", open(report_h).read()).group(1))
n = 1 << int(depth)
size = lambda s: 8192 if s % 4 == 0 else 2048 if s % 4 == 3 else 4096
freed = (lambda s: False) if wrong else (lambda s: s % 4 == 3)
at_peak = [size(s) for s in range(n)]
leaked = [size(s) for s in range(n) if not freed(s)]

def left(sizes):
    rest = sorted(sizes, reverse=True)[cap:]
    return {"stacks": len(rest), "bytes": sum(rest), "allocations": len(rest)}

want = {"sites": left(at_peak), "range_sites": left(at_peak), "leaks": left(leaked),
        "phases": {"stacks": 0, "bytes": 0, "allocations": 0}}
got = rep["left_out"]
print("left out:", got)
assert got == want, (got, want)
tot = rep["totals"]
assert (tot["leaked_bytes"], tot["leaked_allocations"]) == (sum(leaked), len(leaked)), tot
listed = sum(l["bytes"] for l in rep["leaks"])
assert listed + got["leaks"]["bytes"] == tot["leaked_bytes"], (listed, tot)
assert len(rep["leaks"]) == min(cap, len(leaked)), len(rep["leaks"])

def line(table, unit):
    lo = want[table]
    shown = min(cap, len(leaked if table == "leaks" else at_peak))
    return (f"... {shown - 10} more {unit}; {lo['stacks']} smaller stacks not listed "
            f"({lo['bytes'] / 2**20:.2f} MiB in {lo['allocations']} allocation{'' if lo['allocations'] == 1 else 's'})")

# the flame graph's lines sum to the peak, what is left out one frame of its own
folded = [l.rpartition(" ") for l in open(jpath[:-len("json")] + "folded").read().splitlines()]
assert sum(int(b) for _, _, b in folded) == sum(at_peak), sum(int(b) for _, _, b in folded)
lo = want["sites"]
assert (f"({lo['stacks']} smaller stacks not listed)", " ", str(lo["bytes"])) in folded
# so does the HTML page's icicle of the peak
m = re.search(r'class="fgdata" data-target="flamegraph-0">(\[.*?\])</script>', html, re.S)
assert sum(e[0] for e in json.loads(m.group(1))) == sum(at_peak), "icicle"
# so do the Chrome trace's leak events to the bytes leaked
ch = json.load(open(jpath[:-len("json")] + "chrome"))
ev = ch["traceEvents"] if isinstance(ch, dict) else ch
leak_ev = [e["args"] for e in ev if e.get("ph") == "i" and e.get("name") == "leak"]
assert sum(a["bytes"] for a in leak_ev) == sum(leaked), sum(a["bytes"] for a in leak_ev)
assert sum(a["allocations"] for a in leak_ev) == len(leaked)
for table, unit in (("leaks", "stacks"), ("sites", "sites")):
    assert line(table, unit) in text, (table, line(table, unit))
    assert line(table, unit) in html, (table, "html")
for table, m in (("call sites at the peak", n), ("leaks of device memory", len(leaked))):
    assert re.search(rf"note: {table}: {m} distinct stacks: only the {cap} largest", text), table
print("ok")
PY
}

check || fail "the report disagrees with the program's source"

# vramtrace diff of 2^14 stacks (every table listed whole) against 2^15: the
# second run's sites at the peak and leaks are partial, and the diff says so
timeout 120 "$VT" run --sim=t4 -o "$T/s.vtrace" -- "$PROG" 14 >/dev/null 2>"$T/run14.err" ||
    fail "run 14 exit $? ($(tail -3 "$T/run14.err"))"
timeout 300 "$VT" diff "$T/s.vtrace" "$T/m.vtrace" --json "$T/d.json" >"$T/d.txt" 2>&1 ||
    fail "diff exit $?"
python3 - "$T/d.json" "$T/d.txt" "$REPORT_H" <<'PY' ||
import json, re, sys
d, text = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
cap = int(re.search(r"#define VR_MAX_MERGED_SITES (\d+)", open(sys.argv[3]).read()).group(1))
for k in ("peak_sites_complete", "leak_sites_complete"):
    assert d[k] == {"before": True, "after": False}, (k, d[k])
n = 1 << 15  # the second run's stacks, 3 in 4 of them leaked
for table, m in (("peak", n), ("leaked", n * 3 // 4)):
    want = f"note: {table} after: {m - cap} smaller stacks were not listed"
    assert want in text, want
PY
    fail "the diff does not say which run's tables are partial"
# growth over more call sites than are analysed (VR_MAX_SAMPLED_SITES,
# report/state.h): 4096 new stacks kept each step for 32 steps; the sites
# analysed are the first ones, those of the first steps, and the headline's
# shares are of the total growth, the rest said to be not analysed
timeout 120 "$VT" run --sim=t4 -o "$T/g.vtrace" -- "$PROG" grow 17 4096 32 >/dev/null \
    2>"$T/rung.err" || fail "run grow exit $? ($(tail -3 "$T/rung.err"))"
timeout 300 "$VT" report "$T/g.vtrace" --json "$T/g.json" >"$T/g.txt" 2>&1 ||
    fail "report grow exit $?"
grow_check() {
    python3 - "$T/g.json" "$(dirname "$REPORT_H")/state.h" "${1:-}" <<'PY'
import json, re, sys
rep, wrong = json.load(open(sys.argv[1])), sys.argv[3]
cap = int(re.search(r"#define VR_MAX_SAMPLED_SITES (\d+)", open(sys.argv[2]).read()).group(1))
per, steps, size = 4096, 32, 4096
if wrong:  # every site analysed
    cap = per * steps
def slope(ys):
    xs = range(len(ys))
    mx, my = sum(xs) / len(ys), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
total = [size * per * (k + 1) for k in range(steps)]
analysed = [size * min(per * (k + 1), cap) for k in range(steps)]
want = 1 - slope(analysed) / slope(total)
v = rep["verdict"]
print(f"growth {v['bytes_per_iteration']:.0f} B/step, not analysed {v['unanalysed_share']:.4f}, "
      f"truth {want:.4f}; shares {[round(x['share'], 4) for x in v['sites']]}")
assert v["kind"] == "growing" and abs(v["bytes_per_iteration"] - slope(total)) < 1, v["kind"]
assert abs(v["unanalysed_share"] - want) < 0.01, (v["unanalysed_share"], want)
# the listed sites' shares are of the total growth, and leave room for the rest
shares = sum(x["share"] for x in v["sites"])
assert abs(shares - sum(x["bytes_per_iteration"] for x in v["sites"]) / slope(total)) < 0.001
assert shares + v["unanalysed_share"] <= 1.001, shares
assert f"{100 * want:.0f}% in call sites not analysed" in v["text"], v["text"]
PY
}
grow_check || fail "the growth headline disagrees with the program's source"
if grow_check wrong >/dev/null 2>&1; then
    fail "the growth checker accepted a wrong truth (every site analysed)"
fi
if check wrong >/dev/null 2>&1; then
    fail "the checker accepted a wrong truth (the freed stacks counted as leaked)"
fi
[ $fails -eq 0 ] && echo "many_stacks: ok" || echo "many_stacks: $fails failure(s)"
exit $((fails > 0))
