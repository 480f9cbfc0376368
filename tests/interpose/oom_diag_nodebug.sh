#!/bin/sh
# oom_diag_nodebug.sh: the OOM diagnosis of a release build (t_oom.c built
# without debug information or -rdynamic): its functions are named from the
# symbol table with their offset and module, "flat+0x.. (t_oom_nodebug)",
# not as offsets into the executable (dladdr sees no symbol there).
#
# usage: oom_diag_nodebug.sh PRELOAD LIBPATH OUTDIR PROGRAM
set -u
preload=$1 libpath=$2 outdir=$3 program=$4
rm -rf "$outdir" && mkdir -p "$outdir" || exit 1
fail() { echo "oom_diag_nodebug: FAIL: $*" >&2; exit 1; }
name=$(basename "$program")
env VRAMTRACE_SIM_MEMORY=64MiB VRAMTRACE_SIM_CONTEXT_RESERVE=0 VRAMTRACE_OUTPUT="$outdir/t.vtrace" \
    LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libpath" "$program" flat >"$outdir/stdout" \
    2>"$outdir/stderr" || fail "exit status $?"
cat "$outdir/stderr" >&2
grep -q "requested at flat+0x[0-9a-f]* ($name) <- main+0x[0-9a-f]* ($name)" "$outdir/stderr" ||
    fail "the failing call is not named flat+0x.. ($name) <- main+0x.. ($name)"
grep -q "1\. 24\.00 MiB in 1 allocation at flat+0x[0-9a-f]* ($name)" "$outdir/stderr" ||
    fail "the top site is not named from the symbol table"
! grep -q "at $name+0x" "$outdir/stderr" || fail "a frame is still an offset into $name"
echo "oom_diag_nodebug: ok"
