#!/bin/sh
# same_behaviour.sh: a Python script's exit status, stdout and stderr
# (VRAMTRACE_QUIET=1) are the same with and without the preload, for each
# given first argument (an exit status, or "sigint": a caught and then an
# uncaught KeyboardInterrupt).
# usage: same_behaviour.sh PRELOAD SIMDIR OUTDIR PYTHON SCRIPT ARG...
set -u
preload=$1 simdir=$2 out=$3 py=$4 script=$5
shift 5
rm -rf "$out" && mkdir -p "$out" || exit 2
fail=0
for arg in "$@"; do
    LD_LIBRARY_PATH="$simdir" "$py" "$script" "$arg" >"$out/plain.out" 2>"$out/plain.err"
    plain=$?
    VRAMTRACE_QUIET=1 VRAMTRACE_OUTPUT="$out/t.%p.vtrace" LD_PRELOAD="$preload" \
        LD_LIBRARY_PATH="$simdir" "$py" "$script" "$arg" >"$out/pre.out" 2>"$out/pre.err"
    pre=$?
    echo "$arg: exit $plain without, $pre with the preload"
    [ "$plain" = "$pre" ] || { echo "FAIL: exit status differs"; fail=1; }
    cmp -s "$out/plain.out" "$out/pre.out" || { diff "$out/plain.out" "$out/pre.out"; echo "FAIL: stdout differs"; fail=1; }
    cmp -s "$out/plain.err" "$out/pre.err" || { diff "$out/plain.err" "$out/pre.err"; echo "FAIL: stderr differs"; fail=1; }
    ls "$out"/t.*.vtrace >/dev/null 2>&1 || { echo "FAIL: no trace written"; fail=1; }
    rm -f "$out"/t.*.vtrace
done
[ $fail = 0 ] && echo "same_behaviour: ok"
exit $fail
