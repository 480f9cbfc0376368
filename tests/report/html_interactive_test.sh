#!/usr/bin/env bash
# html_interactive_test.sh VRAMTRACE REAL_PROG VT_GEN CHROMIUM OUTDIR: record
# real_prog on the simulated device, render its HTML report and drive it in
# headless Chromium with real mouse and keyboard events (html_cdp.py): hover
# the timeline at the peak and read the tooltip's sites, expand a stack, zoom
# and search the icicle. The screenshots stay in OUTDIR (the test's output).
# The same checker must fail against another trace's report (a wrong ground
# truth), so it can fail.
set -u
VT=$1
PROG=$2
GEN=$3
CHROMIUM=$4
OUT=$5
HERE=$(dirname "$0")
. "$(dirname "$0")/../lib.sh"

timeout 120 "$VT" run --sim=t4 -o "$T/real.vtrace" -- "$PROG" >"$T/run.out" 2>"$T/run.err" ||
    fail "run: exit $? ($(tail -3 "$T/run.err"))"
"$VT" report -q "$T/real.vtrace" --json "$T/real.json" --html "$T/real.html" ||
    fail "report of the real run"
mkdir -p "$OUT"
cp "$T/real.html" "$OUT/report.html"
timeout 200 python3 "$HERE/html_cdp.py" "$CHROMIUM" "$T/real.html" "$T/real.json" "$OUT" ||
    fail "the page does not do what html_cdp.py checks"
for s in 1-opened 2-hover 3-stack-expanded 4-icicle-zoomed 5-icicle-search; do
    [ -s "$OUT/$s.png" ] || fail "no screenshot $s.png in $OUT"
done

# A wrong ground truth: another trace's sites and peak.
"$GEN" growth "$T/growth.vtrace" && "$VT" report -q "$T/growth.vtrace" --json "$T/wrong.json" ||
    fail "report of the synthetic trace"
if timeout 200 python3 "$HERE/html_cdp.py" "$CHROMIUM" "$T/real.html" "$T/wrong.json" \
    "$T/wrong-shots" >"$T/wrong.out" 2>&1; then
    fail "html_cdp.py accepted the page against another trace's report"
else
    grep -q "FAIL: tooltip" "$T/wrong.out" || fail "the wrong ground truth failed for another reason: $(tail -3 "$T/wrong.out")"
fi

[ $fails -eq 0 ] && echo "HTML report: hover, stack expansion, icicle zoom and search work; screenshots in $OUT"
exit $((fails > 0))
