#!/usr/bin/env bash
# symbols_test.sh VRAMTRACE SYM_PROG SYM_LIB: a trace carries its names
# (vramtrace symbolize, which vramtrace run does when the program ends), so
# that a report on a machine without the program's files is the report of
# the machine that recorded it. Ground truth: the report here, named from
# the files (sym_prog and libvtsym.so, whose sym_make has grab inlined).
# The program and its library are recorded from copies in $T/a, reported,
# then removed (the other machine), then replaced by copies whose build-id
# differs: the report must stay member for member the same (but its notes).
# A trace recorded with --no-symbolize must differ there (the check can
# fail), symbolize must leave a named trace as it is and refuse a cut one.
set -u
VT=$1
PROG=$2
LIB=$3
command -v objcopy >/dev/null || { echo "objcopy not found: skipped"; exit 77; }
. "$(dirname "$0")/../lib.sh"
mkdir "$T/a"
cp "$PROG" "$T/a/sym_prog" && cp "$LIB" "$T/a/$(basename "$LIB")" || exit 1

# record NAME [OPTIONS]: $T/NAME.vtrace of $T/a/sym_prog
record() {
    local name=$1
    shift
    LD_LIBRARY_PATH="$T/a${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 120 "$VT" run --sim=t4 "$@" \
        -o "$T/$name.vtrace" -- "$T/a/sym_prog" >"$T/$name.out" 2>"$T/$name.err" ||
        fail "run $name: exit $? ($(tail -3 "$T/$name.err"))"
}
# report TRACE OUT [OPTIONS]: JSON report into $T/OUT.json
report() {
    local trace=$1 out=$2
    shift 2
    timeout 120 "$VT" report "$T/$trace.vtrace" -q --json "$T/$out.json" "$@" 2>"$T/$out.rerr" ||
        fail "report $out: exit $? ($(tail -3 "$T/$out.rerr"))"
}
# same A B WHAT: the JSON reports A and B are equal but their notes and file
same() {
    python3 - "$T/$1.json" "$T/$2.json" "$3" <<'PY' || fail "$3: the reports differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
diff = [k for k in a if k not in ("notes", "file") and a[k] != b.get(k)]
print(f"{sys.argv[3]}: {'the same' if not diff else 'differs in ' + ', '.join(diff)}")
sys.exit(1 if diff else 0)
PY
}
# differs A B WHAT: a wrong input must make `same` fail
differs() {
    local before=$fails
    same "$@" >/dev/null
    if [ "$fails" -gt "$before" ]; then
        fails=$before
        echo "$3: differs, as it must"
    else
        fail "$3: the same, where the trace carries no names"
    fi
}

record named
record unnamed --no-symbolize
contains "$T/named.out" "kept 8 allocations"
report named here
report named here_trace --trace-symbols
same here here_trace "here, named from the files / from the trace's names only"
report unnamed here_unnamed

# the leak's stack, from the trace's names: grab inlined into sym_make, then main
report named trace_only --trace-symbols
python3 - "$T/trace_only.json" <<'PY' || fail "the leak's stack from the trace's names"
import json, sys
leak = json.load(open(sys.argv[1]))["leaks"][0]
st = [(f["function"], f["file"].rsplit("/", 1)[-1], f["inlined"]) for f in leak["stack"][:3]]
print("leak", leak["bytes"], st)
assert leak["bytes"] == 36 << 20, leak["bytes"]
assert [(s[0], s[1], s[2]) for s in st] == [("grab", "sym_lib.c", True),
                                            ("sym_make", "sym_lib.c", False),
                                            ("main", "sym_prog.c", False)], st
PY

# symbolize again: left as it is
cp "$T/named.vtrace" "$T/named.before"
"$VT" symbolize "$T/named.vtrace" 2>"$T/again.err" || fail "symbolize again: exit $?"
contains "$T/again.err" "carries its symbols already"
cmp -s "$T/named.vtrace" "$T/named.before" || fail "a named trace was changed"

# the other machine: the program and its library are gone
rm -rf "$T/a.keep" && mv "$T/a" "$T/a.keep"
report named gone
same here gone "the files gone, the trace's names"
contains "$T/gone.json" "named from the symbols the trace carries"
report unnamed gone_unnamed
differs here_unnamed gone_unnamed "the files gone, a trace without names"
contains "$T/gone_unnamed.json" "vramtrace symbolize"

# another build at the recorded paths (one byte of its build-id changed)
mkdir "$T/a"
for f in "$T/a.keep"/*; do
    id=$(readelf -n "$f" | sed -n 's/^ *Build ID: //p')
    python3 - "$T/note.bin" "$id" <<'PY' || fail "a build-id note for $f"
import struct, sys
desc = bytearray.fromhex(sys.argv[2])
desc[0] ^= 0xff  # another build
open(sys.argv[1], "wb").write(struct.pack("<III", 4, len(desc), 3) + b"GNU\0" + bytes(desc))
PY
    objcopy --update-section .note.gnu.build-id="$T/note.bin" "$f" "$T/a/$(basename "$f")" ||
        fail "objcopy $f"
done
report named rebuilt
same here rebuilt "another build at the recorded paths, the trace's names"
report unnamed rebuilt_unnamed
differs here_unnamed rebuilt_unnamed "another build at the recorded paths, a trace without names"

# a cut trace is refused and left as it is
head -c -30 "$T/unnamed.vtrace" >"$T/cut.vtrace"
cp "$T/cut.vtrace" "$T/cut.before"
"$VT" symbolize "$T/cut.vtrace" 2>"$T/cut.err" && fail "symbolize of a cut trace: exit 0"
contains "$T/cut.err" "cut short"
cmp -s "$T/cut.vtrace" "$T/cut.before" || fail "a cut trace was changed"

echo "symbols_test: $fails failures"
exit $((fails > 0))
