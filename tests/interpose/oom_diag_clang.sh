#!/bin/sh
# oom_diag_clang.sh: the in-process OOM diagnosis names the sites of a
# clang-built program by file and line. clang writes no .debug_aranges, by
# which elfutils 0.188 (Debian 12) alone finds an address's unit: the
# diagnosis then finds the unit by its own ranges (interpose/diagnose.c,
# source_line). t_oom.c ("flat": three allocations and the failure in one
# function, each at its own line) is built here with clang, as the report's
# tests build theirs; the lines named must be the source's.
#
# usage: oom_diag_clang.sh PRELOAD LIBPATH OUTDIR SOURCE CUDA_INCLUDE
# Exit: 0 ok, 1 failed, 77 no clang.
set -u
preload=$1 libpath=$2 outdir=$3 src=$4 inc=$5
fail() { echo "oom_diag_clang: FAIL: $*" >&2; exit 1; }
command -v clang >/dev/null || { echo "oom_diag_clang: SKIP: no clang"; exit 77; }
rm -rf "$outdir" && mkdir -p "$outdir" || exit 1
export VRAMTRACE_SIM_MEMORY=64MiB VRAMTRACE_SIM_CONTEXT_RESERVE=0
prog=$outdir/t_oom_clang
# linked by soname (libcudart.so.13): LD_LIBRARY_PATH picks the sim's
clang -g -O1 -fno-omit-frame-pointer -rdynamic -I"$inc" -o "$prog" "$src" \
    "$libpath/libcudart.so.13" 2>"$outdir/build.log" || { cat "$outdir/build.log" >&2; fail "clang"; }
if readelf -S "$prog" | grep -q debug_aranges; then
    echo "oom_diag_clang: note: this clang wrote .debug_aranges: the unit walk is not exercised"
fi
env VRAMTRACE_OUTPUT="$outdir/flat.vtrace" LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libpath" \
    "$prog" flat >"$outdir/flat.stdout" 2>"$outdir/flat.stderr" || fail "flat: exit status $?"
cat "$outdir/flat.stderr" >&2
line() { grep -n "$1" "$src" | head -1 | cut -d: -f1; }
w=$(line "cudaMalloc(&w,") a=$(line "cudaMalloc(&a\[i\],") h=$(line "cudaMalloc(&huge, (size_t)48 << 20);")
has() { grep -qF -- "$1" "$outdir/flat.stderr" || fail "stderr lacks '$1'"; }
has "requested at flat (t_oom.c:$h) <- main (t_oom.c:"
has "1. 24.00 MiB in 1 allocation at flat (t_oom.c:$w) <- main (t_oom.c:"
has "2. 16.00 MiB in 2 allocations at flat (t_oom.c:$a) <- main (t_oom.c:"
echo "oom_diag_clang: ok"
