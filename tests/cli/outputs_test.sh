#!/usr/bin/env bash
# outputs_test.sh VRAMTRACE VT_GEN: the output table's extensions: an output
# option given a directory writes DIR/STEM.EXT, the same bytes as the named
# file; refusals still hold on the names it makes. run -o's name pattern.
set -u
VT=$1 GEN=$2
. "$(dirname "$0")/../lib.sh"

"$GEN" basic "$T/basic.vtrace" && "$GEN" growth "$T/growth.vtrace" || fail "generate"
mkdir "$T/d" "$T/e"

"$VT" report -q "$T/basic.vtrace" --json "$T/d" --html "$T/d/" --folded "$T/d" \
    --chrome "$T/d" --memory-viz "$T/d" 2>"$T/err" || fail "report into a directory: $(cat "$T/err")"
"$VT" report -q "$T/basic.vtrace" --json "$T/named.json" --folded "$T/named.folded" ||
    fail "report into named files"
for f in basic.json basic.html basic.folded basic.chrome.json basic.pickle; do
    [ -s "$T/d/$f" ] || fail "report: $f not written in the directory ($(ls "$T/d" | tr '\n' ' '))"
done
cmp -s "$T/d/basic.json" "$T/named.json" || fail "DIR/basic.json differs from the named file"
cmp -s "$T/d/basic.folded" "$T/named.folded" || fail "DIR/basic.folded differs from the named file"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/d/basic.json" ||
    fail "DIR/basic.json is not JSON"

"$VT" diff -q "$T/basic.vtrace" "$T/growth.vtrace" --json "$T/e" --html "$T/e" 2>"$T/err" ||
    fail "diff into a directory: $(cat "$T/err")"
for f in basic-vs-growth.diff.json basic-vs-growth.diff.html; do
    [ -s "$T/e/$f" ] || fail "diff: $f not written ($(ls "$T/e" | tr '\n' ' '))"
done

# A made name is refused like a given one: here it is a link.
rm -f "$T/d/basic.json" && ln -s "$T/basic.vtrace" "$T/d/basic.json"
"$VT" report -q "$T/basic.vtrace" --json "$T/d" 2>"$T/err"
[ $? -eq 2 ] || fail "a link at DIR/basic.json was written through"
grep -q "symbolic link" "$T/err" || fail "no reason given: $(cat "$T/err")"

# run -o: "%%p" is a literal "%p" (trace/runname.c's rule), so an existing
# file of that name is refused before the program starts; a bad escape is
# refused with the rule.
: >"$T/x%p.vtrace"
"$VT" run -o "$T/x%%p.vtrace" -- true 2>"$T/err"
[ $? -eq 2 ] || fail "run -o x%%p.vtrace over an existing x%p.vtrace was not refused"
grep -q "already exists" "$T/err" || fail "run -o x%%p: $(cat "$T/err")"
"$VT" run -o "$T/x%q.vtrace" -- true 2>"$T/err"
[ $? -eq 2 ] || fail "run -o with %q was not refused"
grep -qF "a path with only %p (pid), %h (host) or %% escapes" "$T/err" || fail "run -o %q: $(cat "$T/err")"

# An output that cannot be created is refused before the replay, naming
# the directory that refused it: a missing one, and /proc, where an existing
# file's directory takes no new file (mkstemp's ENOENT alone said "No such
# file or directory" of a file that exists).
"$VT" report -q "$T/basic.vtrace" --html "$T/nosuch/r.html" 2>"$T/err"
[ $? -eq 2 ] || fail "an output in a missing directory was not refused"
grep -qF "cannot create a file in $T/nosuch: No such file" "$T/err" || fail "missing dir: $(cat "$T/err")"
if [ -r /proc/version ]; then
    "$VT" report -q "$T/basic.vtrace" --html /proc/version 2>"$T/err"
    [ $? -eq 2 ] || fail "--html /proc/version was not refused"
    grep -qF "cannot create a file in /proc:" "$T/err" || fail "/proc/version: $(cat "$T/err")"
fi

[ "$fails" -eq 0 ] && echo "outputs: ok"
exit $((fails > 0))
