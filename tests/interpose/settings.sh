#!/bin/sh
# settings.sh: VRAMTRACE_OUTPUT escapes (%p pid, %h host name), the default
# trace name vramtrace.<program>.<pid>.vtrace in the working directory, and
# VRAMTRACE_STACK_DEPTH (a limit, 0 = no stacks, a bad value = one stderr
# line and the default 64), each with the program's stdout unchanged.
#
# usage: settings.sh CHECKER PRELOAD LIBPATH OUTDIR PROGRAM (t_oom)
set -u
checker=$1 preload=$2 libpath=$3 outdir=$4 program=$5
rm -rf "$outdir" && mkdir -p "$outdir/cwd" || exit 1
fail() { echo "settings: FAIL: $*" >&2; exit 1; }
export VRAMTRACE_SIM_MEMORY=64MiB VRAMTRACE_SIM_CONTEXT_RESERVE=0
unset VRAMTRACE_OUTPUT VRAMTRACE_STACK_DEPTH VRAMTRACE_QUIET

env LD_LIBRARY_PATH="$libpath" "$program" deep >"$outdir/plain.stdout" 2>/dev/null ||
    fail "the program failed without vramtrace"

# traced NAME [VAR=VALUE...] -- ARGS: run in $outdir/cwd, output in $outdir/NAME.*
traced() {
    name=$1
    shift
    vars=""
    while [ "$1" != "--" ]; do vars="$vars $1" && shift; done
    shift
    # shellcheck disable=SC2086
    (cd "$outdir/cwd" && env $vars LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libpath" \
        "$program" "$@" >"$outdir/$name.stdout" 2>"$outdir/$name.stderr") ||
        fail "$name: exit status $?"
}
pid_of() { sed -n 's/^pid //p' "$outdir/$1.stdout"; }
value() { "$checker" "$1" | sed -n "s/^$2=//p"; }

# %p and %h
traced escapes "VRAMTRACE_OUTPUT=$outdir/t.%p.%h.%%.vtrace" -- pid
want="$outdir/t.$(pid_of escapes).$(uname -n).%.vtrace"
[ -f "$want" ] || { ls "$outdir" >&2; fail "escapes: no trace at $want"; }

# default name in the working directory
traced default -- pid
want="$outdir/cwd/vramtrace.$(basename "$program").$(pid_of default).vtrace"
[ -f "$want" ] || { ls "$outdir/cwd" >&2; fail "default: no trace at $want"; }
grep -qF "trace written to vramtrace.$(basename "$program").$(pid_of default).vtrace" \
    "$outdir/default.stderr" || fail "default: the summary does not name the trace"

# stack depth: unset gives the default; 4 limits; 0 records no stacks
depth_run() { # NAME VALUE: the max stack depth of the trace, stdout compared
    traced "$1" "VRAMTRACE_OUTPUT=$outdir/$1.vtrace" ${2:+"VRAMTRACE_STACK_DEPTH=$2"} -- deep
    cmp -s "$outdir/$1.stdout" "$outdir/plain.stdout" || fail "$1: stdout differs"
    value "$outdir/$1.vtrace" max_stack_depth
}
full=$(depth_run full "")
[ "${full:-0}" -gt 20 ] || fail "no VRAMTRACE_STACK_DEPTH: max depth '$full', expected > 20"
[ "$(depth_run four 4)" = 4 ] || fail "VRAMTRACE_STACK_DEPTH=4 kept more or less than 4 frames"
[ "$(depth_run zero 0)" = 0 ] || fail "VRAMTRACE_STACK_DEPTH=0 recorded stacks"
grep -q "VRAMTRACE_STACK_DEPTH" "$outdir/four.stderr" "$outdir/zero.stderr" &&
    fail "a valid VRAMTRACE_STACK_DEPTH was complained about"

n=0
for bad in abc -1 257 100000 4x ""; do
    n=$((n + 1))
    d=$(depth_run "bad$n" "$bad")
    if [ -z "$bad" ]; then continue; fi
    [ "$d" = "$full" ] || fail "VRAMTRACE_STACK_DEPTH='$bad': depth $d, expected the default's $full"
    lines=$(grep -c "VRAMTRACE_STACK_DEPTH" "$outdir/bad$n.stderr")
    [ "$lines" = 1 ] || fail "VRAMTRACE_STACK_DEPTH='$bad': $lines stderr lines about it, expected 1"
    grep -qF "vramtrace: ignoring VRAMTRACE_STACK_DEPTH='$bad': expected an integer 0..256; using 64" \
        "$outdir/bad$n.stderr" || fail "VRAMTRACE_STACK_DEPTH='$bad': unclear message"
done
echo "settings: ok"
