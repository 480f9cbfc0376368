#!/bin/sh
# run_case.sh: run one test program under LD_PRELOAD=libvramtrace.so and
# check its trace with vt_check against the program's own bookkeeping (the
# line "expect: KEY=VALUE ..." it prints on stdout).
#
# usage: run_case.sh MODE CHECKER PRELOAD LIBPATH OUTDIR [CHECK-ARGS...] -- PROGRAM ARGS...
# MODE:
#   normal      exit status 0 expected
#   compare     also run without the preload: stdout and exit status must match
#   signal:N    the program must die from signal N; the trace must read back
#   kill        SIGKILL once the program printed "ready"; the trace must read back
#   fork        normal; the program forks children that print "child-expect
#               PID: KEY=VALUE ..." and "parent-pid: PID": OUTDIR must hold the
#               parent's trace and one named for each child (trace.PID.vtrace),
#               each checked against its line and the ledger's lines of its pid
#   notrace     compare, stderr too, and no trace at all (a program that
#               makes no hooked CUDA call writes nothing)
# With VTI_VRAMTRACE set (the vramtrace tool), normal and compare runs also
# write the sim's ledger and hold the report's accounting against it
# (tests/ledger/report_vs_ledger.sh).
set -u
mode=$1 checker=$2 preload=$3 libpath=$4 outdir=$5
shift 5
check_args=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    check_args="$check_args $1"
    shift
done
shift
rm -rf "$outdir" && mkdir -p "$outdir" || exit 1
trace="$outdir/trace.vtrace"
fail() { echo "run_case: FAIL: $*" >&2; exit 1; }

ledger="$outdir/ledger.jsonl"
run_traced() {
    env VRAMTRACE_OUTPUT="$trace" VRAMTRACE_SIM_LEDGER="$ledger" LD_PRELOAD="$preload" \
        LD_LIBRARY_PATH="$libpath" "$@"
}

case "$mode" in
normal | fork)
    run_traced "$@" >"$outdir/stdout" 2>"$outdir/stderr"
    st=$?
    cat "$outdir/stderr" >&2
    [ $st -eq 0 ] || fail "exit status $st"
    ;;
compare | notrace)
    env LD_LIBRARY_PATH="$libpath" "$@" >"$outdir/stdout.plain" 2>"$outdir/stderr.plain"
    st_plain=$?
    run_traced "$@" >"$outdir/stdout" 2>"$outdir/stderr"
    st=$?
    cat "$outdir/stderr" >&2
    [ $st -eq $st_plain ] || fail "exit status $st with vramtrace, $st_plain without"
    cmp -s "$outdir/stdout" "$outdir/stdout.plain" || {
        diff "$outdir/stdout.plain" "$outdir/stdout" >&2
        fail "stdout differs with vramtrace"
    }
    ;;
signal:*)
    sig=${mode#signal:}
    run_traced "$@" >"$outdir/stdout" 2>"$outdir/stderr"
    st=$?
    cat "$outdir/stderr" >&2
    [ $st -eq $((128 + sig)) ] || fail "exit status $st, expected death by signal $sig"
    ;;
kill)
    # A simple command, not the function: $! is then the program itself (env
    # execs it), not a subshell that would leave the program running.
    env VRAMTRACE_OUTPUT="$trace" LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libpath" "$@" \
        >"$outdir/stdout" 2>"$outdir/stderr" &
    pid=$!
    i=0
    until grep -q ready "$outdir/stdout" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 600 ] || { kill -9 $pid; fail "no 'ready' within 60 s"; }
        sleep 0.1
    done
    exe=$(readlink "/proc/$pid/exe")
    [ "$exe" = "$(readlink -f "$1")" ] || { kill -9 $pid; fail "pid $pid is $exe, not the program"; }
    kill -9 $pid
    wait $pid
    st=$?
    [ $st -eq 137 ] || fail "exit status $st after SIGKILL"
    ;;
*) fail "unknown mode $mode" ;;
esac
# The preload must make no CUDA call in exit()
# (sim/README.md, "Exit": the sim says so on stderr; a real driver may crash).
late="vramtrace-sim: a driver call at exit"
if grep -q "$late" "$outdir/stderr" && ! grep -qs "$late" "$outdir/stderr.plain"; then
    fail "a CUDA call at exit, with vramtrace only"
fi

if [ "$mode" = notrace ]; then
    cmp -s "$outdir/stderr" "$outdir/stderr.plain" || fail "stderr differs with vramtrace"
    n=$(ls "$outdir" | grep -c '\.vtrace$')
    [ "$n" -eq 0 ] || fail "$n traces in $outdir, expected none"
    echo "run_case: ok ($mode)"
    exit 0
fi
[ -f "$trace" ] || fail "no trace at $trace"
# check_trace TRACE "KEY=VALUE ...": vt_check with CHECK-ARGS and the
# program's expectations, and what every trace must hold: each module file
# it names is the one that was loaded (build-ids), every stack node an
# allocation names and string an NVTX range names is in it, and no thread
# pops a range it did not push.
check_trace() {
    args="--expect module_ids_differ=0 --expect broken_stacks=0 --expect broken_strings=0"
    args="$args --expect unmatched_pops=0"
    for kv in $2; do args="$args --expect $kv"; done
    # shellcheck disable=SC2086
    "$checker" "$1" $check_args $args
}
# ledger_check TRACE OUTJSON [--pid P]: with VTI_VRAMTRACE, the report's
# accounting against the sim's ledger (of process P)
ledger_check() {
    [ -z "${VTI_VRAMTRACE:-}" ] || sh "$(dirname "$0")/../ledger/report_vs_ledger.sh" \
        "$VTI_VRAMTRACE" "$1" "$ledger" "$2" ${3:+"$3"} ${4:+"$4"}
}
if [ "$mode" = fork ]; then
    n=$(ls "$outdir" | grep -c '\.vtrace$')
    kids=$(grep -c '^child-expect ' "$outdir/stdout")
    [ "$kids" -gt 0 ] || fail "no child-expect line"
    [ "$n" -eq $((kids + 1)) ] || fail "$n traces in $outdir, expected the parent's and $kids"
    grep '^child-expect ' "$outdir/stdout" | while read -r _ pid kvs; do
        pid=${pid%:}
        kid="$outdir/trace.$pid.vtrace"
        [ -f "$kid" ] || fail "no trace of child $pid"
        check_trace "$kid" "$kvs" || fail "the trace of child $pid: check failed"
        ledger_check "$kid" "$outdir/report.$pid.json" --pid "$pid" ||
            fail "the report of child $pid does not match the sim's ledger"
    done || exit 1
    ppid=$(sed -n 's/^parent-pid: //p' "$outdir/stdout")
    ledger_check "$trace" "$outdir/report.json" --pid "$ppid" ||
        fail "the report does not match the sim's ledger"
fi
expects=$(sed -n 's/^expect: //p' "$outdir/stdout" | tail -n 1)
[ -n "$expects" ] || fail "the program printed no 'expect:' line"
check_trace "$trace" "$expects" || fail "trace check failed"
# SIGKILL leaves the trace's spill file: vramtrace recover appends what it
# holds (here nothing: the program slept past a flush) and removes it, and
# the trace still passes the same check.
if [ "$mode" = kill ] && [ -n "${VTI_VRAMTRACE:-}" ]; then
    "$VTI_VRAMTRACE" recover "$trace" 2>"$outdir/recover.txt" ||
        { cat "$outdir/recover.txt" >&2; fail "vramtrace recover failed"; }
    ! "$VTI_VRAMTRACE" report "$trace" 2>/dev/null | grep -q "holds what the process recorded" ||
        fail "recover left the spill file"
    check_trace "$trace" "$expects" || fail "trace check failed after recover"
fi
case "$mode" in
normal | compare)
    ledger_check "$trace" "$outdir/report.json" || fail "the report does not match the sim's ledger"
    ;;
esac
echo "run_case: ok ($mode)"
