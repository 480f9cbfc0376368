#!/bin/sh
# file_cycles_fixture.sh CHECKER CC FIXTURE_DIR: check_file_cycles.py fails on
# a known circle and passes without it.
# fixture/a.c calls b_value() of b.c; b.c reads a.c's global a_counter (a data
# symbol). Compiled the way CMake does (CMakeFiles/<target>.dir/*.o, a compile
# database naming each object), the checker must exit 1 and name the circle
# with one witness symbol per edge. Built with -DNO_BACK_EDGE (b.c reads a
# static a_counter of its own) it must exit 0; with --skip fix or --skip
# fix/b.c, too. --unused lists the globals no object uses.
set -eu
CHECK=$1
CC=$2
FIX=$3
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
mkdir -p "$D/src/fix" "$D/build/fix/CMakeFiles/fixture.dir"
cp "$FIX/a.c" "$FIX/b.c" "$D/src/fix/"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=%s\n' "$D/src" >"$D/build/CMakeCache.txt"

# build FLAGS: compile both files and write the compile database.
build() {
    sep=""
    printf '[' >"$D/build/compile_commands.json"
    for f in a b; do
        obj=fix/CMakeFiles/fixture.dir/$f.c.o
        (cd "$D/build" && "$CC" -O2 $1 -c -o "$obj" "$D/src/fix/$f.c")
        printf '%s{"directory": "%s", "command": "%s -O2 %s -o %s -c %s", "file": "%s"}' \
            "$sep" "$D/build" "$CC" "$1" "$obj" "$D/src/fix/$f.c" "$D/src/fix/$f.c" \
            >>"$D/build/compile_commands.json"
        sep=","
    done
    printf ']\n' >>"$D/build/compile_commands.json"
}

build ""
rc=0
"$CHECK" "$D/build" >"$D/out" 2>&1 || rc=$?
cat "$D/out"
[ "$rc" -eq 1 ] || fail "a circle: exit $rc, not 1"
grep -q '^circle in target fixture: 2 files: fix/a.c fix/b.c$' "$D/out" || fail "circle not named"
grep -q '^  edge: fix/a.c -> fix/b.c (uses b_value)$' "$D/out" || fail "a->b witness missing"
grep -q '^  edge: fix/b.c -> fix/a.c (uses a_counter)$' "$D/out" || fail "b->a witness (data) missing"
grep -q '^  cycle: fix/a.c -(b_value)-> fix/b.c -(a_counter)-> fix/a.c$' "$D/out" ||
    fail "cycle line missing"

rc=0
"$CHECK" "$D/build" --skip fix >"$D/out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "--skip fix: exit $rc: $(cat "$D/out")"
grep -q '0 circle(s), skipped: fix$' "$D/out" || fail "--skip fix: $(cat "$D/out")"
rc=0
"$CHECK" "$D/build" --skip fix/b.c >"$D/out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "--skip fix/b.c: exit $rc: $(cat "$D/out")"
grep -q '1 targets, 1 files, 0 circle(s), skipped: fix/b.c$' "$D/out" || fail "--skip fix/b.c: $(cat "$D/out")"

build -DNO_BACK_EDGE
rc=0
"$CHECK" "$D/build" >"$D/out" 2>&1 || rc=$?
cat "$D/out"
[ "$rc" -eq 0 ] || fail "no circle (static a_counter in b.c): exit $rc"
grep -q '1 targets, 2 files, 0 circle(s)$' "$D/out" || fail "summary: $(cat "$D/out")"

# --unused: a.c's a_entry and (without the back edge) a_counter are used by no
# object; b_value is used by a.c; b.c's static a_counter is never listed.
"$CHECK" "$D/build" --unused >"$D/out" 2>&1 || fail "--unused: exit $?"
grep -q '^unused in target fixture: fix/a.c: a_entry$' "$D/out" || fail "--unused: a_entry missing"
grep -q '^unused in target fixture: fix/a.c: a_counter$' "$D/out" || fail "--unused: a_counter missing"
[ "$(grep -c '^unused' "$D/out")" -eq 2 ] || fail "--unused lists more: $(cat "$D/out")"

rm "$D/build/compile_commands.json"
rc=0
"$CHECK" "$D/build" >"$D/out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "no compile database: exit $rc, not 2"
echo "file_cycles_fixture: ok"
