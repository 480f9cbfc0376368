#!/bin/sh
# run_py_frames_overhead.sh: cost of libvramtrace.so per event (an
# allocation or a free) in a Python process at 10 Python + 20 native frames
# (py_frames_overhead.py), with Python frames (the default) and with native
# stacks only (VRAMTRACE_PYTHON_FRAMES=0), beside no preload. Prints
# measured numbers only; the best of REPS runs of each configuration.
#
# usage: run_py_frames_overhead.sh PYTHON HELPER PRELOAD SIMDIR [N] [REPS]
set -eu
py=$1 helper=$(readlink -f "$2") preload=$(readlink -f "$3") simdir=$(readlink -f "$4")
n=${5:-100000} reps=${6:-3}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # env assignments for the run, then nothing
    for i in $(seq "$reps"); do
        rm -f "$tmp/t.vtrace"
        env "$@" LD_LIBRARY_PATH="$simdir" VRAMTRACE_QUIET=1 VRAMTRACE_OUTPUT="$tmp/t.vtrace" \
            "$py" "$here/py_frames_overhead.py" "$helper" "$n" 10 20 | sed -n 's/^ns_per_pair=//p'
    done | sort -g | head -n 1
}
per_event() { echo "$1 / 2" | bc -l | xargs printf '%.1f'; }

plain=$(run VRAMTRACE_NONE=1)
native=$(run LD_PRELOAD="$preload" VRAMTRACE_PYTHON_FRAMES=0)
python=$(run LD_PRELOAD="$preload")
[ -n "$plain" ] && [ -n "$native" ] && [ -n "$python" ] ||
    { echo "run_py_frames_overhead: a run printed no time" >&2; exit 1; }
echo "vramtrace python: events=$((2 * n)) depth=10 python + 20 native"
echo "vramtrace python: plain_ns_per_event=$(per_event "$plain")"
echo "vramtrace python: native_only_ns_per_event=$(per_event "$native")"
echo "vramtrace python: python_frames_ns_per_event=$(per_event "$python")"
echo "vramtrace python: python_frames_added_ns_per_event=$(per_event "($python - $native)")"
