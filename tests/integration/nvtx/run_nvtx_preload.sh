#!/bin/sh
# run_nvtx_preload.sh PRELOAD SIMDIR PROGRAM CHECKER WORKDIR [empty]
# Runs PROGRAM under the preload on the simulated device, in a fresh WORKDIR
# (where the trace is written), with NVTX_INJECTION64_PATH unset by us (or set
# to the empty string with "empty", which NVTX treats as unset): the preload
# must set it. Then CHECKER verifies the one trace in WORKDIR.
set -eu
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
preload=$(abs "$1") simdir=$(abs "$2") prog=$(abs "$3") check=$(abs "$4") work=$(abs "$5")
rm -rf "$work"
mkdir -p "$work"
cd "$work"
nvtx_env="-u NVTX_INJECTION64_PATH"
[ "${6:-}" = empty ] && nvtx_env="NVTX_INJECTION64_PATH="
# shellcheck disable=SC2086
if ! env -u VRAMTRACE_OUTPUT $nvtx_env LD_PRELOAD="$preload" LD_LIBRARY_PATH="$simdir" "$prog"; then
    echo "run_nvtx_preload: $prog failed under the preload" >&2
    exit 1
fi
exec "$check" "$work"
