#!/bin/sh
# vramtrace diff on the GAN trainer: --retain-history (before) against the
# fixed run (after) names bn_block_forward's site as the largest change; a run
# diffed with itself names no change (the checker fails on it); outputs keep
# report's safety rules.
# usage: diff_test.sh VRAMTRACE TRAIN CHECKER
set -eu
VT=$1 TRAIN=$2 CHECK=$3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export VRAMTRACE_SIM_MEMORY=2GiB VRAMTRACE_QUIET=1
ARGS="--synthetic --memory-only --log-every 1000 --batch 64 --steps 20"
"$VT" run --sim=t4 -o "$W/before.vtrace" -- "$TRAIN" $ARGS --retain-history >/dev/null
"$VT" run --sim=t4 -o "$W/after.vtrace" -- "$TRAIN" $ARGS >/dev/null

"$VT" diff "$W/before.vtrace" "$W/after.vtrace" --json "$W/d.json" --html "$W/d.html" \
    --top 3 >"$W/d.txt"
cat "$W/d.txt"
python3 "$CHECK" "$W/d.json" || fail "checker on before/after"
grep -q "^-- Call sites by change" "$W/d.txt" || fail "no sites section in text"
sed -n '/^-- Call sites/,/^  change/p;/^  change/,$p' "$W/d.txt" | sed -n '1,20p' |
    grep -q "by bn_block_forward" || fail "text: bn_block_forward not in the first site"
grep -q "<h2>Call sites by change</h2>" "$W/d.html" || fail "html: no sites table"
grep -q "bn_block_forward" "$W/d.html" || fail "html: bn_block_forward missing"

# The same run twice: no change; the checker must fail on it.
"$VT" diff "$W/before.vtrace" "$W/before.vtrace" --json "$W/same.json" >"$W/same.txt"
grep -q "^no call site changed" "$W/same.txt" || fail "same run: a change reported"
if python3 "$CHECK" "$W/same.json"; then fail "checker passed a diff with no change"; fi
# Another function is not the largest change: the checker names what it saw.
if python3 "$CHECK" "$W/d.json" conv_pass; then fail "checker passed a wrong function"; fi

# Output safety (as report): never onto an input, never through a link, bad input exits 2.
if "$VT" diff "$W/before.vtrace" "$W/after.vtrace" --json "$W/after.vtrace" -q 2>/dev/null; then
    fail "wrote onto an input"
fi
ln -s "$W/x" "$W/link.json"
if "$VT" diff "$W/before.vtrace" "$W/after.vtrace" --json "$W/link.json" -q 2>/dev/null; then
    fail "wrote through a link"
fi
[ ! -e "$W/x" ] || fail "link followed"
echo garbage >"$W/bad.vtrace"
set +e
"$VT" diff "$W/before.vtrace" "$W/bad.vtrace" -q 2>"$W/err"; rc=$?
"$VT" diff "$W/before.vtrace" -q 2>/dev/null; rc1=$?
set -e
[ "$rc" = 2 ] && [ -s "$W/err" ] || fail "bad trace: exit $rc"
[ "$rc1" = 2 ] || fail "one file: exit $rc1"
echo "diff_test: ok"
