#!/bin/sh
# robust.sh VRAMTRACE PRELOAD SIMDIR OUTDIR T_ROBUST: each case of t_robust
# (and a Python Ctrl-C) runs without and with the preload; exit status,
# stdout, stderr (VRAMTRACE_QUIET=1) and the program's own files must be
# identical byte for byte, and the trace must hold the program's events
# (issue 14: the preload never changes what the program sees).
set -u
VT=$1 PRELOAD=$2 SIM=$3 OUT=$4 PROG=$5
rm -rf "$OUT"
mkdir -p "$OUT"
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# run DIR PRELOAD|none QUIET MODE [ARG]: run in DIR; rc, stdout, stderr there.
run() {
    dir=$1 pre=$2 quiet=$3
    shift 3
    mkdir -p "$dir"
    if [ "$pre" = none ]; then pre=; fi
    (cd "$dir" && timeout 60 env LD_PRELOAD="$pre" LD_LIBRARY_PATH="$SIM" \
        VRAMTRACE_QUIET="$quiet" VRAMTRACE_OUTPUT="$dir/trace.vtrace" "$@" \
        >stdout 2>stderr </dev/null)
    echo $? >"$dir/rc"
}

# same CASE FILE...: FILE identical in CASE/plain and CASE/traced.
same() {
    c=$1
    shift
    for f in "$@"; do
        cmp -s "$OUT/$c/plain/$f" "$OUT/$c/traced/$f" ||
            fail "$c: $f differs with the preload: $(head -c 300 "$OUT/$c/traced/$f")"
    done
}

# count CASE KEY: totals.KEY of the traced run's report.
count() {
    "$VT" report -q --allow-truncated "$OUT/$1/traced/trace.vtrace" --json "$OUT/$1/r.json" \
        >/dev/null 2>&1
    grep -o "\"$2\":[0-9]*" "$OUT/$1/r.json" 2>/dev/null | head -1 | cut -d: -f2
}

# expect_count CASE KEY N
expect_count() {
    got=$(count "$1" "$2")
    [ "$got" = "$3" ] || fail "$1: the trace has $2=$got, wanted $3"
}

# case_run CASE QUIET MODE [ARG]: both runs; ARG "@" is the run's directory.
case_run() {
    c=$1 quiet=$2 mode=$3 arg=${4:-}
    for how in plain traced; do
        pre=none
        [ $how = traced ] && pre=$PRELOAD
        a=$arg
        [ "$arg" = @ ] && a=$OUT/$c/$how
        [ "$arg" = @data ] && a=$OUT/$c/$how/data
        run "$OUT/$c/$how" "$pre" "$quiet" "$PROG" "$mode" ${a:+"$a"}
    done
}

case_run closefds 1 closefds @data
same closefds rc stdout stderr data
expect_count closefds allocations 10
expect_count closefds frees 10

case_run dup2 1 dup2 @data
same dup2 rc stdout stderr data
expect_count dup2 allocations 10
expect_count dup2 frees 10

# Not quiet: the OOM diagnosis and the summary must go nowhere, not into err.
case_run closestd 0 closestd @
same closestd rc in out err
expect_count closestd allocations 10
expect_count closestd failed_allocations 1

case_run fsize 1 fsize
# Every preload message obeys VRAMTRACE_QUIET, the file-size stop included.
same fsize rc stdout stderr
[ "$(count fsize allocations)" -ge 10 ] 2>/dev/null || fail "fsize: the first allocations are lost"

case_run signals 1 signals
same signals rc stdout stderr
expect_count signals frees 10

for m in _exit quick_exit; do
    case_run "$m" 1 "$m"
    same "$m" rc stdout stderr
    expect_count "$m" allocations 10
    "$VT" check "$OUT/$m/traced/trace.vtrace" --max-peak 1MiB >/dev/null 2>&1
    rc=$?
    [ $rc -eq 1 ] || fail "$m: check --max-peak 1MiB exits $rc, wanted 1 (the 10 MiB peak seen)"
done

case_run overflow 1 overflow
same overflow rc stdout stderr
[ "$(cat "$OUT/overflow/traced/rc")" -gt 128 ] || fail "overflow: not killed by a signal"
expect_count overflow allocations 10

# A trace that cannot be created (its directory is missing): the program runs
# as without the preload, and stderr gets one line more, the one message that
# names the file and why (it once named the file twice).
for how in plain traced; do
    pre=none
    [ $how = traced ] && pre=$PRELOAD
    d=$OUT/nodir/$how
    mkdir -p "$d"
    (cd "$d" && timeout 60 env LD_PRELOAD="${pre#none}" LD_LIBRARY_PATH="$SIM" \
        VRAMTRACE_OUTPUT="$d/missing/trace.vtrace" "$PROG" signals >stdout 2>stderr </dev/null)
    echo $? >"$d/rc"
done
same nodir rc stdout
want="vramtrace: tracing stopped: cannot create $OUT/nodir/traced/missing/trace.vtrace: No such file or directory"
{ cat "$OUT/nodir/plain/stderr"; echo "$want"; } >"$OUT/nodir/want"
cmp -s "$OUT/nodir/want" "$OUT/nodir/traced/stderr" ||
    fail "nodir: stderr is not the program's plus one line: $(head -c 300 "$OUT/nodir/traced/stderr")"
[ -e "$OUT/nodir/traced/missing" ] && fail "nodir: the preload created the missing directory"

# Python's Ctrl-C: its SIGINT handler is installed, KeyboardInterrupt runs cleanup.
# (Not with a sanitizer runtime in PRELOAD: it changes Python's signals itself.)
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null || true)
case $PRELOAD in *:*) PY= ;; esac
if [ -n "$PY" ]; then
    cat >"$OUT/int.py" <<'EOF'
import os, signal, time
print(signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGSEGV))
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
except KeyboardInterrupt:
    print("cleanup ran")
EOF
    for how in plain traced; do
        pre=none
        [ $how = traced ] && pre=$PRELOAD
        run "$OUT/python/$how" "$pre" 1 "$PY" "$OUT/int.py"
    done
    same python rc stdout stderr
    grep -q "cleanup ran" "$OUT/python/traced/stdout" || fail "python: no KeyboardInterrupt"
fi

[ $fails -eq 0 ] && echo "all robustness cases identical with and without the preload"
[ $fails -eq 0 ]
