#!/bin/sh
# bundle.sh: gather what tests/gpu/smoke.sh needs on a GPU machine that has
# the CUDA driver, toolkit and PyTorch but none of this project's Debian
# libraries: the built programs and libraries (same bin/ and lib/ layout as
# the build, so `vramtrace run` finds lib/libvramtrace.so) and the shared
# libraries they need that such a machine may lack (deps/).
#
# usage: tests/gpu/bundle.sh BUILD DEST     (DEST is emptied first)
set -eu
build=$1 dest=$2
rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib" "$dest/deps"
for p in vramtrace train alloc_touch_free client_static_cudart client_device_query \
         client_device_query_drv client_vmm_mmap probe_driver probe_pool probe_context probe_graphmem probe_graphpool probe_graphgive t_fork "$build"/bin/corpus_*; do
    cp "$build/bin/$(basename "$p")" "$dest/bin/"
done
cp "$build/lib/libvramtrace.so" "$build/lib/libvramtrace_cupti.so" "$build/lib/libcorpus_alloc.so" \
   "$dest/lib/"
# The non-CUDA, non-glibc libraries of the preload, the report and train.
for so in libunwind.so.8 libdw.so.1 libelf.so.1 libzstd.so.1 libopenblas.so.0 libgfortran.so.5 \
          libquadmath.so.0 libpng16.so.16; do
    path=$(ldd "$build/lib/libvramtrace.so" "$build/bin/vramtrace" "$build/bin/train" |
           awk -v n="$so" '$1 == n { print $3; exit }')
    [ -n "$path" ] || { echo "bundle: $so not found by ldd" >&2; exit 1; }
    cp -L "$path" "$dest/deps/$so"
done
du -sh "$dest"
