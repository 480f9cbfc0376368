#!/bin/sh
# Usage: with_core.sh CORE PROGRAM [ARG...]
# Runs PROGRAM with OPENBLAS_CORETYPE=CORE when this CPU has the instructions
# that OpenBLAS kernel uses; otherwise exits 77 (ctest's SKIP_RETURN_CODE), since
# a forced kernel the CPU lacks dies of SIGILL (CI's machine has no AVX-512).
# The flag names are /proc/cpuinfo's (Linux); "pni" is SSE3.
core=$1
shift
case $core in
    SkylakeX) need="avx512f avx512cd avx512bw avx512dq avx512vl" ;;
    Haswell | Zen) need="avx2 fma" ;;
    Sandybridge) need="avx" ;;
    Prescott) need="pni" ;;
    *) echo "with_core.sh: no instruction list for core '$core'" >&2; exit 2 ;;
esac
flags=$(grep -m1 '^flags' /proc/cpuinfo) || {
    echo "with_core.sh: no x86 flags in /proc/cpuinfo, so no $core kernel here: skipped"
    exit 77
}
for f in $need; do
    case " ${flags#*:} " in
        *" $f "*) ;;
        *) echo "with_core.sh: this CPU lacks $f, which OpenBLAS's $core kernel needs: skipped"; exit 77 ;;
    esac
done
OPENBLAS_CORETYPE=$core exec "$@"
