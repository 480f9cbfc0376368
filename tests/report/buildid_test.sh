#!/usr/bin/env bash
# buildid_test.sh VRAMTRACE REAL_PROG: frames are named only from the file
# that was loaded. Records a copy of real_prog with `vramtrace run --sim` and
# reports it (names, no note); then puts at the recorded path a copy whose
# build-id differs by one byte (objcopy --update-section: the same code, so
# the old behaviour would print the right-looking names from a file that is
# not the recorded one) and reports again: no name or source line of
# real_prog in any output, its frames as offsets, one note with both ids.
# Then, with the recorded build served by debuginfod (a file:// URL), the
# report names the frames again from that file, with a note. Last, a copy
# without a build-id is named from the file here, with a note. Recorded with
# --no-symbolize: a trace that carries its names (symbols_test.sh) is named
# from them whatever the files here are.
set -u
unset DEBUGINFOD_URLS # no server but the test's own
VT=$1
PROG=$2
command -v objcopy >/dev/null || { echo "objcopy not found: skipped"; exit 77; }
. "$(dirname "$0")/../lib.sh"
lacks() { ! grep -aq -- "$2" "$1" || fail "$1 has '$2': $(grep -aom1 -- ".\{0,50\}$2.\{0,30\}" "$1")"; }
build_id() { readelf -n "$1" | sed -n 's/^ *Build ID: //p'; }
# record_report NAME: record $T/NAME under vramtrace run (trace $T/NAME.vtrace),
# then report it as text into $T/NAME.txt.
record_report() {
    timeout 120 "$VT" run --sim=t4 --no-symbolize -o "$T/$1.vtrace" -- "$T/$1" >"$T/run.out" 2>"$T/run.err" ||
        fail "run of $1: exit $? ($(tail -3 "$T/run.err"))"
    timeout 120 "$VT" report "$T/$1.vtrace" >"$T/$1.txt" 2>&1 || fail "report of $1: exit $?"
}

cp "$PROG" "$T/prog" || exit 1
record_report prog
contains "$T/prog.txt" "at leak_site (.*real_prog.c:"
lacks "$T/prog.txt" "note: .*build-id"
lacks "$T/prog.txt" "could not be checked"

# The same program with another build-id at the recorded path.
recorded=$(build_id "$T/prog")
objcopy -O binary --only-section=.note.gnu.build-id "$T/prog" "$T/note" || exit 1
size=$(stat -c %s "$T/note")
last=$(od -An -tu1 -j $((size - 1)) "$T/note" | tr -d ' ')
printf "\\$(printf %o $(((last + 1) % 256)))" |
    dd of="$T/note" bs=1 seek=$((size - 1)) conv=notrunc 2>/dev/null
objcopy --update-section .note.gnu.build-id="$T/note" "$T/prog" "$T/prog.other" || exit 1
mv "$T/prog.other" "$T/prog"
here=$(build_id "$T/prog")
[ -n "$recorded" ] && [ -n "$here" ] && [ "$recorded" != "$here" ] ||
    fail "build-ids: '$recorded' recorded, '$here' now"
timeout 120 "$VT" report "$T/prog.vtrace" --json "$T/o.json" --html "$T/o.html" \
    --folded "$T/o.folded" --chrome "$T/o.chrome" --memory-viz "$T/o.pickle" \
    >"$T/other.txt" 2>&1 || fail "report of the other build: exit $?"
for f in other.txt o.json o.html o.folded o.chrome o.pickle; do
    for name in leak_site grow_site too_big real_prog.c; do
        lacks "$T/$f" "$name"
    done
done
contains "$T/other.txt" "at prog+0x[0-9a-f]* (in prog)"
note="note: prog here differs from the recorded one (build-id $recorded recorded, $here here): its frames are shown as offsets"
contains "$T/other.txt" "$note"
[ "$(grep -c "here differs from the recorded one" "$T/other.txt")" -eq 1 ] ||
    fail "not one note: $(grep -c "here differs" "$T/other.txt")"
contains "$T/o.json" "prog here differs from the recorded one"

# The recorded build found by its build-id (elfutils' find_elf and debuginfod).
if ldconfig -p | grep -q 'libdebuginfod\.so\.1 '; then
    mkdir -p "$T/srv/buildid/$recorded" && cp "$PROG" "$T/srv/buildid/$recorded/executable"
    DEBUGINFOD_URLS="file://$T/srv" DEBUGINFOD_CACHE_PATH="$T/cache" timeout 120 \
        "$VT" report "$T/prog.vtrace" >"$T/found.txt" 2>&1 || fail "report with debuginfod: exit $?"
    contains "$T/found.txt" "at leak_site (.*real_prog.c:"
    contains "$T/found.txt" "note: $T/prog here is not the recorded one: its frames are named from .*, found by the recorded build-id $recorded"
    lacks "$T/found.txt" "here differs"
else
    echo "libdebuginfod.so.1 not installed: the lookup by build-id is not checked"
fi
# A program built without a build-id: recorded with none, named from the
# file here (nothing to check it by), with a note that says so.
objcopy --remove-section .note.gnu.build-id "$PROG" "$T/noid" || exit 1
[ -z "$(build_id "$T/noid")" ] || fail "objcopy left a build-id in $T/noid"
record_report noid
contains "$T/noid.txt" "at leak_site (.*real_prog.c:"
contains "$T/noid.txt" "note: noid has no build-id, so the file here could not be checked against the recorded one"
lacks "$T/noid.txt" "here differs"

[ $fails -eq 0 ] && echo "frames named only from the recorded build"
[ $fails -eq 0 ] || { cat "$T/other.txt"; }
exit $((fails > 0))
