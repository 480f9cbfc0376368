#!/usr/bin/env bash
# cli_test.sh VRAMTRACE VT_GEN: the vramtrace command line on synthetic
# traces: exit codes of report/check/run, outputs written, damaged files.
set -u
VT=$1
GEN=$2
. "$(dirname "$0")/../lib.sh"

# expect CODE CMD...: run with a time limit, check the exit status
expect() {
    local want=$1; shift
    timeout 60 "$@" >"$T/out" 2>"$T/err"
    local got=$?
    [ "$got" -eq "$want" ] || fail "exit $got, wanted $want: $* ($(head -c 300 "$T/err"))"
}

for s in basic growth capacity leakoom frag external xss noend empty badutf8; do
    "$GEN" "$s" "$T/$s.vtrace" || fail "generate $s"
done

# help, version, usage errors
expect 0 "$VT" --version; contains "$T/out" "vramtrace "
expect 0 "$VT" --help
for c in run report check; do expect 0 "$VT" $c --help; contains "$T/out" "usage: vramtrace $c"; done
expect 2 "$VT"
expect 2 "$VT" frobnicate
expect 2 "$VT" report
expect 2 "$VT" report --top zero "$T/basic.vtrace"
expect 2 "$VT" check
expect 2 "$VT" run
# An unusable input is named once in its message, by every command that
# reads traces (symbolize left it out; report, diff and check named a
# missing file twice).
echo "not a trace" >"$T/plain.txt"
for c in report symbolize check; do
    expect 2 "$VT" $c "$T/plain.txt"
    contains "$T/err" "$c: $T/plain.txt: not a .vtrace file"
    expect 2 "$VT" $c "$T/nosuch.vtrace"
    [ "$(grep -o "$T/nosuch.vtrace" "$T/err" | wc -l)" -eq 1 ] ||
        fail "$c of a missing file: $(cat "$T/err")"
done

# A trace on a pipe reads once (the report's run-sibling lookup reads only
# regular files): the same report as from the file, bar its title line.
# --memory-viz reads the trace twice: refused with a message on a pipe.
timeout 60 "$VT" report /dev/stdin < <(cat "$T/leakoom.vtrace") >"$T/pipe.txt" 2>"$T/pipe.err" ||
    fail "report /dev/stdin: $(head -c 300 "$T/pipe.err")"
"$VT" report "$T/leakoom.vtrace" >"$T/file.txt" 2>&1
diff <(grep -v '^== vramtrace report:' "$T/pipe.txt") \
    <(grep -v '^== vramtrace report:' "$T/file.txt") >/dev/null ||
    fail "report of a pipe differs from the file's"
expect 2 "$VT" report /dev/stdin -q --memory-viz "$T/pipe.pickle" < <(cat "$T/leakoom.vtrace")
contains "$T/err" "not a file (a pipe?)"

# A trace of format version 3 (v3_basic.vtrace: `vt_gen basic` before version
# 4 added module build-ids) still reads, and reports as the same scenario now
# (but for its name and its clock's start: vt_gen starts a trace an hour
# ahead of the clock when it writes it), and its failed frees, which format
# 12 began to record, are null instead of none.
expect 0 "$VT" report "$(dirname "$0")/v3_basic.vtrace" --json "$T/v3.json"
expect 0 "$VT" report "$T/basic.vtrace" --json "$T/v4.json"
contains "$T/v3.json" '"failed_frees":null'
sed 's/"file":"[^"]*"//; s/"start_mono_ns":[0-9]*,//; s/"failed_frees":null/"failed_frees":[]/' \
    "$T/v3.json" >"$T/v3.cmp"
sed 's/"file":"[^"]*"//; s/"start_mono_ns":[0-9]*,//' "$T/v4.json" >"$T/v4.cmp"
cmp -s "$T/v3.cmp" "$T/v4.cmp" || fail "the version-3 trace reports otherwise than version 4"

# report: text and every output file
expect 0 "$VT" report "$T/basic.vtrace" --json "$T/b.json" --folded "$T/b.folded" \
    --chrome "$T/b.chrome.json" --html "$T/b.html" --top 5
for s in "-- Peak --" "-- Out of memory" "-- Leaks --" "-- Growth --" "-- Fragmentation" \
    "-- Top sites at peak --" "were never freed"; do contains "$T/out" "$s"; done
contains "$T/b.json" '"format":"vramtrace-report"'
contains "$T/b.folded" " 104857600$"
contains "$T/b.chrome.json" '"traceEvents"'
contains "$T/b.html" "<svg"
expect 0 "$VT" report --quiet "$T/basic.vtrace" --json "$T/q.json"
[ -s "$T/out" ] && fail "--quiet printed text"
expect 2 "$VT" report "$T/basic.vtrace" --json "$T/no/such/dir/x.json"

# several files side by side
expect 0 "$VT" report "$T/basic.vtrace" "$T/capacity.vtrace" "$T/frag.vtrace"
contains "$T/out" "3 traces"
contains "$T/out" "capacity.vtrace"
contains "$T/out" "fragmentation"

# check: limits, sizes, exit codes
expect 0 "$VT" check "$T/basic.vtrace" --max-peak 180MiB --max-leaked 102MiB --no-oom
expect 1 "$VT" check "$T/basic.vtrace" --max-peak 179MiB
[ "$(wc -l <"$T/out")" -eq 1 ] || fail "one line per broken limit"
expect 1 "$VT" check "$T/basic.vtrace" --max-peak 100MB --max-leaked 1KiB
[ "$(wc -l <"$T/out")" -eq 2 ] || fail "two broken limits, two lines"
expect 0 "$VT" check "$T/basic.vtrace" --max-peak 0.2GB
expect 1 "$VT" check "$T/capacity.vtrace" --no-oom
expect 1 "$VT" check "$T/growth.vtrace" --max-growth 1000KB
expect 0 "$VT" check "$T/growth.vtrace" --max-growth 1MiB
# the growth total in the project's size format, as its sites are (it was
# "+1048576 bytes/iteration" above "1.00 MiB/iteration"), text and HTML
expect 0 "$VT" report "$T/growth.vtrace" --html "$T/growth.html"
contains "$T/out" "^total: +1.00 MiB/iteration (R^2 1.000)"
contains "$T/growth.html" "total +1.00 MiB/iteration, R² 1.000"
expect 2 "$VT" check "$T/basic.vtrace" --max-peak 12XB
expect 2 "$VT" check "$T/nonexistent.vtrace"
echo "not a trace" >"$T/text.vtrace"
expect 2 "$VT" check "$T/text.vtrace"
expect 2 "$VT" report "$T/text.vtrace"
contains "$T/err" "text.vtrace"

# check cannot vouch for an unfinished or empty trace (exit 2 unless allowed)
expect 2 "$VT" check "$T/noend.vtrace" --max-peak 1GiB
contains "$T/err" "no end-of-process record"
expect 0 "$VT" check "$T/noend.vtrace" --max-peak 1GiB --allow-incomplete
expect 1 "$VT" check "$T/noend.vtrace" --max-peak 1MiB --allow-incomplete
expect 2 "$VT" check "$T/empty.vtrace"
contains "$T/err" "0 events recorded"
expect 0 "$VT" check "$T/empty.vtrace" --allow-empty

# outputs never overwrite an input nor follow a link (exit 2, nothing changed)
cp "$T/basic.vtrace" "$T/in.vtrace"
sum=$(md5sum <"$T/in.vtrace")
for o in --html --json --chrome --folded; do
    expect 2 "$VT" report "$T/in.vtrace" $o "$T/in.vtrace"
    contains "$T/err" "input trace"
done
ln -s in.vtrace "$T/link.json"
expect 2 "$VT" report "$T/in.vtrace" --json "$T/link.json"
contains "$T/err" "symbolic link"
[ "$(md5sum <"$T/in.vtrace")" = "$sum" ] || fail "an input trace was changed by report"
echo precious >"$T/precious.txt"
ln -s precious.txt "$T/o.html"
expect 2 "$VT" report "$T/basic.vtrace" --html "$T/o.html"
[ "$(cat "$T/precious.txt")" = precious ] || fail "a planted link's target was overwritten"
[ -L "$T/o.html" ] || fail "the planted link was replaced"
# an output in a missing directory is refused before anything is replayed or
# printed (the text report on stdout was printed first, then exit 2)
for o in --html --json --chrome --folded --memory-viz; do
    expect 2 "$VT" report "$T/basic.vtrace" $o "$T/no-such-dir/out"
    contains "$T/err" "cannot write"
    [ ! -s "$T/out" ] || fail "report $o into a missing directory printed a report first"
done
expect 2 "$VT" diff "$T/basic.vtrace" "$T/growth.vtrace" --html "$T/no-such-dir/d.html"
[ ! -s "$T/out" ] || fail "diff --html into a missing directory printed a diff first"
expect 2 "$VT" report "$T/basic.vtrace" --json "$T/same" --html "$T/same"
# an existing output is replaced whole (through a temporary file), none left behind
echo old >"$T/r.json"
expect 0 "$VT" report -q "$T/basic.vtrace" --json "$T/r.json"
grep -q '"vramtrace-report"' "$T/r.json" || fail "r.json not replaced"
ls -A "$T" | grep -q '^\.r\.json\.' && fail "a temporary output file was left behind"
expect 2 "$VT" report -q "$T/basic.vtrace" --json "$T/nodir/r.json"
# invalid UTF-8 in argv and names: JSON, Chrome and HTML outputs stay valid UTF-8
expect 0 "$VT" report -q "$T/badutf8.vtrace" --json "$T/u.json" --chrome "$T/u.chrome.json" \
    --html "$T/u.html"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; [json.load(open(f, encoding="utf-8")) for f in sys.argv[1:]]' \
        "$T/u.json" "$T/u.chrome.json" || fail "JSON output is not valid UTF-8 JSON"
fi
iconv -f UTF-8 -t UTF-8 "$T/u.html" >/dev/null 2>&1 || fail "HTML output is not valid UTF-8"
iconv -f UTF-8 -t UTF-8 "$T/u.json" >/dev/null 2>&1 || fail "JSON output is not valid UTF-8"

# damaged files: an error message and a non-zero exit, never a crash or hang
size=$(stat -c %s "$T/frag.vtrace")
for cut in 3 12 30 $((size / 2)) $((size - 5)); do
    head -c "$cut" "$T/frag.vtrace" >"$T/cut.vtrace"
    timeout 60 "$VT" report "$T/cut.vtrace" >/dev/null 2>"$T/err"
    rc=$?
    { [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ -s "$T/err" ]; } || fail "cut at $cut: exit $rc"
    timeout 60 "$VT" check "$T/cut.vtrace" >/dev/null 2>&1
    [ $? -eq 2 ] || fail "check of a file cut at $cut should exit 2"
done
# the frames start after magic (8), version (4), header length (4), header
hlen=$(od -An -tu4 -j 12 -N4 "$T/frag.vtrace" | tr -d ' ')
start=$((16 + hlen))
flip() { # flip bit 4 of byte $1 of frag.vtrace into flip.vtrace
    cp "$T/frag.vtrace" "$T/flip.vtrace"
    local orig
    orig=$(od -An -tu1 -j "$1" -N1 "$T/flip.vtrace" | tr -d ' ')
    printf "$(printf '\\%03o' $(((orig ^ 0x10) & 255)))" |
        dd of="$T/flip.vtrace" bs=1 seek="$1" conv=notrunc status=none
}
for pos in 0 9 13 20 $((start - 1)); do # header: an error or a report, no crash
    flip "$pos"
    timeout 60 "$VT" report "$T/flip.vtrace" >/dev/null 2>&1
    [ $? -lt 124 ] || fail "header bit flip at $pos: crash or hang"
done
for pos in $((start + 1)) $((start + 7)) $(((start + size) / 2)) $((size - 10)) $((size - 1)); do
    flip "$pos"
    timeout 60 "$VT" report "$T/flip.vtrace" >/dev/null 2>"$T/err"
    rc=$?
    { [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ -s "$T/err" ]; } || fail "bit flip at $pos: exit $rc"
done

# run: environment and exit status (only where the preload library was built)
lib="$(dirname "$VT")/../lib/libvramtrace.so"
# (not in sanitizer builds: `vramtrace run` puts the preload before the
# sanitizer's runtime, which must come first; interpose/ tests cover it there)
if [ -e "$lib" ] && [ -z "${VRAMTRACE_CLI_NO_RUN:-}" ]; then
    expect 3 "$VT" run -o "$T/run.vtrace" -- sh -c 'echo "$LD_PRELOAD $VRAMTRACE_OUTPUT"; exit 3'
    contains "$T/out" "libvramtrace.so $T/run.vtrace"
    expect 137 "$VT" run -o "$T/run2.vtrace" -- sh -c 'kill -9 $$'
    if [ -d "$(dirname "$VT")/../lib/sim" ]; then
        expect 0 "$VT" run --sim=t4 -o "$T/run3.vtrace" -- sh -c 'echo "$LD_LIBRARY_PATH $VRAMTRACE_SIM_DEVICE"'
        contains "$T/out" "lib/sim"
        contains "$T/out" " t4"
        # --sim preloads the simulated runtime after the recorder (a DT_RPATH
        # to a real libcudart, as in PyTorch's wheels, must not win).
        expect 0 "$VT" run --sim -o "$T/run4.vtrace" -- sh -c 'echo "$LD_PRELOAD"'
        contains "$T/out" "libvramtrace.so:"
        contains "$T/out" "lib/sim/libcudart.so.13"
        # --torch-tensors: PyTorch's cudaMallocAsync backend, added to the user's settings.
        PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 expect 0 "$VT" run --torch-tensors \
            -o "$T/run5.vtrace" -- sh -c 'echo "conf=$PYTORCH_CUDA_ALLOC_CONF"'
        contains "$T/out" "conf=backend:cudaMallocAsync,max_split_size_mb:64"
        PYTORCH_CUDA_ALLOC_CONF=backend:native expect 2 "$VT" run --torch-tensors \
            -o "$T/run6.vtrace" -- true
        contains "$T/err" "already names a backend"
    fi
    expect 127 "$VT" run -- /nonexistent/program
    # One line, the reason; nothing after it about traces or the driver
    # (it added "no CUDA driver on this machine ... --sim", or "no trace
    # written", to a program that never started).
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "cannot run /nonexistent/program" "$T/err" ||
        fail "run of a missing program: $(cat "$T/err")"
    # A program that ran and exited 127 itself is not taken for one that
    # could not start.
    expect 127 "$VT" run -o "$T/run127.vtrace" -- sh -c 'exit 127'
    contains "$T/err" "no trace written\|no CUDA driver"
    # An existing -o file is refused before the program runs (traces are never overwritten).
    echo keep >"$T/exists.vtrace"
    expect 2 "$VT" run -o "$T/exists.vtrace" -- sh -c 'echo ran >"$0.ran"' "$T/exists"
    contains "$T/err" "already exists"
    [ ! -e "$T/exists.ran" ] || fail "run started the program despite an existing -o"
    [ "$(cat "$T/exists.vtrace")" = keep ] || fail "an existing -o file changed"
else
    echo "note: $lib not built; run tests skipped"
fi

[ $fails -eq 0 ] && echo "all CLI checks passed"
exit $((fails > 0))
