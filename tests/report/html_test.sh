#!/usr/bin/env bash
# html_test.sh VRAMTRACE VT_GEN CHROMIUM: render the HTML report in headless
# Chromium; after the scripts ran the DOM must hold the timeline and the
# flamegraph, and strings from the trace containing <script> must come out
# as text (escaped), never as elements.
set -u
VT=$1
GEN=$2
CHROMIUM=$3
. "$(dirname "$0")/../lib.sh"

chrome() { # chrome ARGS... (fresh profile, nothing from the network; its
    # singleton socket directory in $T, not /tmp, where it outlives the run)
    TMPDIR="$T" timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d "$T/profile.XXXXXX")" "$@" 2>>"$T/chrome.log"
}

"$GEN" xss "$T/xss.vtrace" || fail "generate xss"
"$GEN" frag "$T/frag.vtrace" || fail "generate frag"
"$VT" report -q "$T/xss.vtrace" "$T/frag.vtrace" --html "$T/report.html" || fail "report --html"

chrome --dump-dom "file://$T/report.html" >"$T/dom.html"
[ -s "$T/dom.html" ] || fail "empty DOM dump (see chrome log: $(tail -3 "$T/chrome.log"))"
for id in 'id="timeline-0"' 'id="timeline-1"' 'id="flamegraph-0"' 'id="flamegraph-0-rendered"' \
    'id="flamegraph-1-rendered"' 'class="fg-frame"' 'data-rendered="1"' 'class="peak"' \
    'class="oom"'; do
    grep -q -- "$id" "$T/dom.html" || fail "DOM lacks $id"
done
grep -q '&lt;script&gt;alert(1)&lt;/script&gt;' "$T/dom.html" || fail "range name not shown escaped"
grep -q '&lt;script&gt;alert(2)&lt;/script&gt;' "$T/dom.html" || fail "note not shown escaped"
grep -q '<script>alert' "$T/dom.html" && fail "a script element from the trace is in the DOM"
grep -q '&lt;b&gt;bold&lt;/b&gt;' "$T/dom.html" || fail "argv not shown escaped"
grep -q '<div class="regions">regions: G.5.bn_out, &lt;script&gt;alert(4)&lt;/script&gt;</div>' \
    "$T/dom.html" || fail "NVTX Mem region names not shown (escaped) beside their site"

# y ticks in binary units, the device's capacity drawn as a line (the frag
# trace's 1 GiB device is within 4x its peak) or named above the scale, the
# multi-file summary's growth column (one cell per file), sections that fold.
grep -q '<text class="ytick"[^>]*>4 MiB<' "$T/dom.html" || fail "no binary-unit y tick (4 MiB)"
grep -q '<text class="capacity"[^>]*>device 0 capacity 1.00 GiB<' "$T/dom.html" ||
    fail "no capacity line label"
grep -q 'growth per iteration</th>' "$T/dom.html" || fail "the summary lacks the growth column"
[ "$(grep -o 'class="n growth"' "$T/dom.html" | wc -l)" -eq 2 ] ||
    fail "the summary does not have one growth cell per file"
grep -q '<details class="sec" data-sec="fragmentation">' "$T/dom.html" ||
    fail "the fragmentation section is not a closed <details>"

# The "whole run" checkbox swaps the activity view for the whole-run one.
sed 's#</body>#<script>document.querySelector("input.tl-whole").click()</script></body>#' \
    "$T/report.html" >"$T/toggled.html"
chrome --dump-dom "file://$T/toggled.html" >"$T/toggled.dom"
grep -q 'id="timeline-0" class="timeline"[^>]*style="display: none;"' "$T/toggled.dom" ||
    fail "the whole-run toggle did not hide the activity view"
grep -q 'id="timeline-0-whole"[^>]*style=""' "$T/toggled.dom" ||
    fail "the whole-run toggle did not show the whole-run view"

chrome --screenshot="$T/out.png" --window-size=1200,2000 "file://$T/report.html" >/dev/null
[ -s "$T/out.png" ] || fail "no screenshot"
if [ -n "${VRAMTRACE_KEEP_SCREENSHOT:-}" ]; then cp "$T/out.png" "$VRAMTRACE_KEEP_SCREENSHOT"; fi

[ $fails -eq 0 ] && echo "HTML report renders in Chromium"
exit $((fails > 0))
