#!/bin/sh
# fork_pool.sh PRELOAD SIMDIR OUTDIR PROGRAM: t_fork_pool under the preload
# on the simulated device, once recording into OUTDIR and once with a trace
# path that cannot be created (the session fails to start in every process;
# the program must still behave as without the preload). Each run must exit
# 0: no forked child hung on a lock its parent's thread held at the fork.
set -eu
preload=$1 simdir=$2 out=$3 prog=$4
rm -rf "$out"
mkdir -p "$out/traces"
run() { # $1 = trace path
    env LD_LIBRARY_PATH="$simdir" LD_PRELOAD="$preload" VRAMTRACE_QUIET=1 \
        VRAMTRACE_OUTPUT="$1" "$prog"
}
run "$out/traces/fork_pool.vtrace" || { echo "fork_pool: hung or failed while recording" >&2; exit 1; }
n=$(ls "$out/traces" | wc -l)
[ "$n" -ge 2 ] || { echo "fork_pool: expected the parent's and the children's traces, found $n" >&2; exit 1; }
run "$out/missing/dir/fork_pool.vtrace" 2>"$out/stderr" ||
    { echo "fork_pool: hung or failed with an unwritable trace" >&2; cat "$out/stderr" >&2; exit 1; }
echo "fork_pool: ok ($n traces)"
