#!/usr/bin/env bash
# inline_test.sh VRAMTRACE INLINE_PROG SOURCE: record inline_prog (-O2 -g)
# and a copy stripped of debug info on the simulated device, then check the
# logical frames of each leak (inline_check.py): with debug info, every inlined
# frame with its caller at the call line; stripped, one site per call address.
set -u
VT=$1
PROG=$2
SRC=$3
HERE=$(cd "$(dirname "$0")" && pwd)
. "$(dirname "$0")/../lib.sh"

record() { # NAME PROGRAM
    timeout 60 "$VT" run --sim=t4 -o "$T/$1.vtrace" -- "$2" >"$T/$1.out" 2>"$T/$1.err" ||
        fail "run $1: exit $? ($(tail -3 "$T/$1.err"))"
    timeout 60 "$VT" report "$T/$1.vtrace" --json "$T/$1.json" >"$T/$1.txt" 2>&1 ||
        fail "report $1: exit $?"
}

record debug "$PROG"
python3 "$HERE/inline_check.py" debug "$T/debug.json" "$SRC" || fail "debug frames"
# the checker fails on a wrong answer: expected lines one off
python3 "$HERE/inline_check.py" debug "$T/debug.json" "$SRC" --shift 1 >"$T/shift.out" &&
    fail "the checker accepted lines shifted by one"

objcopy --strip-debug "$PROG" "$T/inline_stripped" || fail "objcopy"
record stripped "$T/inline_stripped"
python3 "$HERE/inline_check.py" stripped "$T/stripped.json" "$T/inline_stripped" ||
    fail "stripped sites"
# ... and on the debug build's leaks, which carry lines and no offsets
python3 "$HERE/inline_check.py" stripped "$T/debug.json" "$PROG" >"$T/wrong.out" &&
    fail "the stripped checker accepted the debug build's report"

[ $fails -eq 0 ] && echo "inlined frames reported as expected"
[ $fails -eq 0 ] || cat "$T/debug.txt" "$T/stripped.txt"
exit $((fails > 0))
