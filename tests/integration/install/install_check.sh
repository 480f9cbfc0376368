#!/bin/sh
# install_check.sh CMAKE BUILDDIR PREFIX LIBDIR: install into PREFIX, check
# the layout (the simulated device under LIBDIR/vramtrace/sim, never on the
# default library path), then record and report a run with the installed
# tools only.
set -u
cmake=$1 build=$2 prefix=$3 libdir=$4
fail() { echo "install_check: FAIL: $*" >&2; exit 1; }
rm -rf "$prefix" && "$cmake" --install "$build" --prefix "$prefix" >/dev/null || fail "cmake --install"
for f in bin/vramtrace bin/train "$libdir/libvramtrace.so" "$libdir/libvramtrace_cupti.so" \
    "$libdir/vramtrace/sim/libcudart.so.13" "$libdir/vramtrace/sim/libcuda.so.1"; do
    [ -e "$prefix/$f" ] || fail "missing $f"
done
[ ! -e "$prefix/$libdir/libcudart.so.13" ] || fail "simulated runtime on the default library path"
[ ! -e "$prefix/$libdir/libcuda.so.1" ] || fail "simulated driver on the default library path"
work=$(mktemp -d) && cd "$work" || exit 1
trap 'rm -rf "$work"' EXIT
"$prefix/bin/vramtrace" run --sim=t4 -o run.vtrace -- "$prefix/bin/train" --memory-only \
    --steps 2 >out 2>err || { cat err >&2; fail "vramtrace run from the prefix"; }
"$prefix/bin/vramtrace" report run.vtrace >report.txt || fail "vramtrace report from the prefix"
grep -q "peak allocated" report.txt || { cat report.txt >&2; fail "no peak in the report"; }
grep -q "Tesla T4" report.txt || { cat report.txt >&2; fail "not recorded on the simulated T4"; }
echo "install_check: ok"
