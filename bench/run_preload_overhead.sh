#!/bin/sh
# run_preload_overhead.sh: added cost of libvramtrace.so per event (an
# allocation or a free) at call depth 20 on the simulated device, beside
# heaptrack's added cost for malloc/free at the same depth. Prints measured
# numbers only; the best of REPS runs of each configuration is used.
#
# usage: run_preload_overhead.sh PROGRAM PRELOAD SIMDIR [N] [DEPTH] [REPS]
set -eu
prog=$(readlink -f "$1") preload=$(readlink -f "$2") simdir=$(readlink -f "$3")
n=${4:-200000} depth=${5:-20} reps=${6:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ns() { sed -n 's/^ns_per_pair=//p'; }
best() { sort -g | head -n 1; }

plain=$(for i in $(seq "$reps"); do
    LD_LIBRARY_PATH=$simdir "$prog" cuda "$n" "$depth" | ns; done | best)
traced=$(for i in $(seq "$reps"); do
    rm -f "$tmp/t.vtrace"
    VRAMTRACE_QUIET=1 VRAMTRACE_OUTPUT="$tmp/t.vtrace" LD_PRELOAD=$preload \
        LD_LIBRARY_PATH=$simdir "$prog" cuda "$n" "$depth" | ns; done | best)
bytes=$(stat -c %s "$tmp/t.vtrace")
events=$((2 * n + 2))
echo "vramtrace: events=$events depth=$depth"
echo "vramtrace: plain_ns_per_event=$(echo "$plain / 2" | bc -l | xargs printf '%.1f')"
echo "vramtrace: traced_ns_per_event=$(echo "$traced / 2" | bc -l | xargs printf '%.1f')"
echo "vramtrace: added_ns_per_event=$(echo "($traced - $plain) / 2" | bc -l | xargs printf '%.1f')"
echo "vramtrace: trace_bytes_per_event=$(echo "$bytes / $events" | bc -l | xargs printf '%.2f')"

if command -v heaptrack >/dev/null 2>&1; then
    mplain=$(for i in $(seq "$reps"); do "$prog" malloc "$n" "$depth" | ns; done | best)
    mtraced=$(cd "$tmp" && for i in $(seq "$reps"); do
        heaptrack "$prog" malloc "$n" "$depth" 2>/dev/null | ns; done | best)
    echo "heaptrack: plain_ns_per_event=$(echo "$mplain / 2" | bc -l | xargs printf '%.1f')"
    echo "heaptrack: traced_ns_per_event=$(echo "$mtraced / 2" | bc -l | xargs printf '%.1f')"
    echo "heaptrack: added_ns_per_event=$(echo "($mtraced - $mplain) / 2" | bc -l | xargs printf '%.1f')"
else
    echo "heaptrack: not installed"
fi
