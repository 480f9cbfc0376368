#!/bin/sh
# torch_tensors_env.sh: `vramtrace run --torch-tensors` hands the program
# PYTORCH_CUDA_ALLOC_CONF with backend:cudaMallocAsync, keeps other settings
# already there, and refuses another backend with an error.
# usage: torch_tensors_env.sh VRAMTRACE OUTDIR
set -u
tool=$1 out=$2
rm -rf "$out" && mkdir -p "$out" || exit 2
show='echo "conf=$PYTORCH_CUDA_ALLOC_CONF"'
fail=0
expect() { # want, then env assignments
    want=$1; shift
    got=$(env "$@" "$tool" run --torch-tensors -o "$out/t.%p.vtrace" -- sh -c "$show" 2>/dev/null)
    echo "$* -> $got"
    [ "$got" = "conf=$want" ] || { echo "FAIL: want conf=$want"; fail=1; }
}
expect backend:cudaMallocAsync -u PYTORCH_CUDA_ALLOC_CONF
expect backend:cudaMallocAsync,expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
expect backend:cudaMallocAsync PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
env PYTORCH_CUDA_ALLOC_CONF=backend:native "$tool" run --torch-tensors -- true 2>"$out/err"
rc=$?
cat "$out/err"
[ $rc -ne 0 ] && grep -q "another backend" "$out/err" ||
    { echo "FAIL: another backend was not refused (exit $rc)"; fail=1; }
[ $fail = 0 ] && echo "torch_tensors_env: ok"
exit $fail
