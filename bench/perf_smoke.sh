#!/bin/sh
# perf_smoke.sh BUILD: bench/perf.py end to end at its --quick sizes. Asserts
# only that every figure is printed and is a number (perf.py --check), never
# on a value; shows that the check fails on a figure that is not a number and
# on a missing one; regenerates the README's Measured table on a copy and
# checks that the text outside the markers is kept and the table comes from
# the output.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
perf() { python3 "$here/perf.py" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

perf --quick --build "$build" >"$tmp/out"
cat "$tmp/out"
perf --check "$tmp/out"

sed 's/^\(figure record\.d20\.vramtrace\) [^ ]*/\1 nan/' "$tmp/out" >"$tmp/nan"
! perf --check "$tmp/nan" 2>"$tmp/err" || fail "--check accepted a figure that is not a number"
grep -q 'not a number: record.d20.vramtrace' "$tmp/err" || fail "--check did not name the bad figure"
grep -v '^figure gan\.overhead ' "$tmp/out" >"$tmp/missing"
! perf --check "$tmp/missing" 2>"$tmp/err" || fail "--check accepted an output without gan.overhead"
grep -q 'missing: gan.overhead' "$tmp/err" || fail "--check did not name the missing figure"

cp "$here/../README.md" "$tmp/README.md"
perf --readme "$tmp/README.md" "$tmp/out"
outside() { sed '/<!-- measured:begin/,/<!-- measured:end -->/d' "$1"; }
outside "$here/../README.md" >"$tmp/before"
outside "$tmp/README.md" >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" || fail "--readme changed the README outside the markers"
d20=$(sed -n 's/^figure record\.d20\.vramtrace \([^ ]*\) .*/\1/p' "$tmp/out")
grep -q "call depth 20 | $d20 ns" "$tmp/README.md" || fail "the table's depth-20 cell is not the output's $d20"
grep -q "mode=quick" "$tmp/README.md" && fail "the table quoted the info line raw"
grep -q "quick" "$tmp/README.md" || fail "the table does not say it comes from a quick run"
echo "perf_smoke: ok"
