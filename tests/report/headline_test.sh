#!/bin/sh
# headline_test.sh VRAMTRACE TRAIN: the verdict every report opens with
# (report.h, vr_headline) and the preload's exit line, on the retained-tensors
# run (train --retain-history, 20 steps, no crash yet). Ground truths: the
# rate is train's own allocated= numbers per step; the projected OOM step is
# the step the same program dies at when it runs on (--steps 400). The checks
# are also shown failing: a healthy run must not pass them.
set -eu
VT=$1
TRAIN=$2
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ARGS="--memory-only --retain-history --synthetic --log-every 1"

# Ground truth 1: the step the run dies at.
"$VT" run --sim=t4 -o "$D/crash.vtrace" -- "$TRAIN" $ARGS --steps 400 >"$D/crash.out" 2>&1 || true
died=$(sed -n 's/^train: device out of memory at step \([0-9]*\) .*/\1/p' "$D/crash.out")
[ -n "$died" ] || fail "the long run did not die of an OOM"

# The run under test: 20 steps, no crash.
"$VT" run --sim=t4 -o "$D/grow.vtrace" -- "$TRAIN" $ARGS --steps 20 >"$D/grow.out" 2>&1 ||
    fail "the 20-step run failed: $(tail -3 "$D/grow.out")"
# Ground truth 2: bytes per step from train's allocated= (steps 10 -> 20).
truth=$(awk -F'allocated=' '/^step=10\// { split($2, a, " "); x = a[1] }
    /^step=20\// { split($2, a, " "); y = a[1] } END { printf "%.0f", (y - x) / 10 }' "$D/grow.out")
"$VT" report "$D/grow.vtrace" --html "$D/grow.html" --json "$D/grow.json" >"$D/grow.txt"
head -1 "$D/grow.txt" >"$D/first"
grep '^vramtrace: GROWING' "$D/grow.out" | sed 's/^vramtrace: //' >"$D/exit" || true
sed -n 's/.*<p class="verdict"[^>]*><b>\([^<]*\)<.*/\1/p' "$D/grow.html" >"$D/html"

# check LINE_FILE NAME: "GROWING: +R MiB per train_step ... projected at train_step N"
# with R within 1% of the truth and N within 1 of the step the run died at.
check() {
    python3 - "$1" "$2" "$truth" "$died" <<'EOF'
import re, sys
line = open(sys.argv[1]).read().strip()
name, truth, died = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
m = re.match(r"GROWING: \+([0-9.]+) (KiB|MiB|GiB) per train_step .*"
             r"out of memory projected at train_step ([0-9]+)", line)
if not m:
    sys.exit(f"{name}: not a growth verdict: {line[:160]!r}")
rate = float(m.group(1)) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
if abs(rate - truth) > 0.01 * truth:
    sys.exit(f"{name}: {rate:.0f} bytes/step, train says {truth:.0f}")
if abs(int(m.group(3)) - died) > 1:
    sys.exit(f"{name}: projected step {m.group(3)}, the run died at step {died}")
print(f"{name}: ok: {line[:120]}")
EOF
}
check "$D/first" "text first line" || fail "text report"
check "$D/html" "HTML header" || fail "HTML header"
check "$D/exit" "exit line" || fail "exit line"
python3 - "$D/grow.json" "$truth" "$died" <<'EOF' || fail "JSON verdict"
import json, sys
r = json.load(open(sys.argv[1]))
v, truth, died = r["verdict"], float(sys.argv[2]), int(sys.argv[3])
assert list(r)[:3] == ["format", "version", "file"] and "verdict" in r, list(r)[:5]
assert v["kind"] == "growing", v["kind"]
assert abs(v["bytes_per_iteration"] - truth) <= 0.01 * truth, (v["bytes_per_iteration"], truth)
assert abs(v["projected_oom_iteration"] - died) <= 1, (v["projected_oom_iteration"], died)
assert v["iteration_name"] == "train_step"
labels = [s["label"] for s in v["sites"]]
assert any(l.startswith("bn_block_forward ") for l in labels), labels
assert abs(sum(s["share"] for s in v["sites"]) - 1) < 1e-3, "shares must add up to 1"
# the culprit's stack starts at the culprit frame, not in the allocator
for s in v["sites"]:
    assert s["stack"][0]["function"] == s["label"].split(" ")[0], s["stack"][0]
print("JSON verdict: ok:", v["text"][:100])
EOF

# The same checks fail on a healthy run (no --retain-history).
"$VT" run --sim=t4 -o "$D/ok.vtrace" -- "$TRAIN" --memory-only --synthetic --steps 20 \
    >"$D/ok.out" 2>&1 || fail "the healthy run failed"
"$VT" report "$D/ok.vtrace" | head -1 >"$D/ok_first"
grep -q '^HEALTHY: peak reserved .* headroom' "$D/ok_first" ||
    fail "healthy run: first line $(cat "$D/ok_first")"
if check "$D/ok_first" "healthy text" 2>/dev/null; then fail "the check passed a healthy run"; fi
if grep -q '^vramtrace: GROWING' "$D/ok.out"; then fail "healthy run: exit line says GROWING"; fi
echo "headline: ok (truth $truth bytes/step, died at step $died)"
