#!/bin/sh
# gan_stacks.sh VRAMTRACE PRELOAD SIMDIR TRAIN OUTDIR [--wrong]
#
# The GAN's NVTX region stacks (8,765 in 50 steps, most of them taken from
# remembered walks: interpose/unwind.c) against libunwind's. Three runs of
# `train --synthetic --memory-only --steps 3` under the preload:
#   fast       the default walk (remembered walks, their stack ids)
#   libunwind  VRAMTRACE_UNWIND=libunwind: unw_backtrace at every capture
#   check      VRAMTRACE_UNWIND=check: both at every capture; a difference
#              (frames, or a remembered stack id against the one found again)
#              stops tracing ("tracing stopped" on stderr)
# Passes when check never stopped and the report's folded stacks of fast and
# libunwind are the same. --wrong takes the reference with
# VRAMTRACE_STACK_DEPTH=6 instead (other stacks): that run must fail, which
# shows the comparison can.
set -eu
vt=$1 preload=$2 simdir=$3 train=$4 out=$5 wrong=${6:-}
rm -rf "$out" && mkdir -p "$out"

run() { # NAME ENV...
    name=$1
    shift
    env LD_LIBRARY_PATH="$simdir" LD_PRELOAD="$preload" VRAMTRACE_SIM_DEVICE=t4 \
        VRAMTRACE_OUTPUT="$out/$name.vtrace" "$@" \
        "$train" --synthetic --memory-only --log-every 1000 --steps 3 \
        >"$out/$name.out" 2>"$out/$name.err"
    if grep -q "tracing stopped" "$out/$name.err"; then
        echo "gan_stacks: $name: $(grep "tracing stopped" "$out/$name.err")"
        exit 1
    fi
    "$vt" report -q "$out/$name.vtrace" --folded "$out/$name.folded" >/dev/null
}

run fast VRAMTRACE_UNWIND=fast
run check VRAMTRACE_UNWIND=check
if [ "$wrong" = --wrong ]; then
    run reference VRAMTRACE_UNWIND=libunwind VRAMTRACE_STACK_DEPTH=6
else
    run reference VRAMTRACE_UNWIND=libunwind
fi
if [ ! -s "$out/fast.folded" ]; then
    echo "gan_stacks: no folded stacks from the fast run"
    exit 1
fi
if ! cmp -s "$out/fast.folded" "$out/reference.folded"; then
    echo "gan_stacks: the fast walk's stacks differ from libunwind's:"
    diff "$out/fast.folded" "$out/reference.folded" | head -20
    exit 1
fi
echo "gan_stacks: $(wc -l <"$out/fast.folded") folded stacks the same; check mode never stopped"
