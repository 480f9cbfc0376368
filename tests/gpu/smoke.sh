#!/bin/bash
# smoke.sh: the GPU smoke run. On a machine with a real GPU (driver, CUDA 13
# toolkit, PyTorch in python3), run this project's programs with and without
# the preload and keep everything for tests/gpu/check_recorded.py, which holds the
# traces against independent truths where the run is back on a machine
# without a GPU (README "What runs where", tests/gpu/README.md).
#
# usage: tests/gpu/smoke.sh BUNDLE OUTDIR     (BUNDLE from tests/gpu/bundle.sh)
# Writes OUTDIR/gpu.tar.gz (every output) and prints a log. Each step has a
# time limit; a failing step is logged and the next one runs.
set -u
B=$(cd "$1" && pwd) O=$2
W=/tmp/vt-gpu && rm -rf $W && mkdir -p $W
log() { echo "== $*"; }
t0=$(date +%s)
step() { # step NAME SECONDS CMD... : run, keep rc/stdout/stderr under $W/NAME.*
    local n=$1 s=$2; shift 2
    timeout "$s" "$@" >"$W/$n.out" 2>"$W/$n.err"; local rc=$?
    echo $rc >"$W/$n.rc"
    echo "step $n rc=$rc ($(( $(date +%s) - t0 )) s): $(tail -c 300 "$W/$n.err" | tr '\n' ' ')"
}

log machine
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv | tee $W/gpu.txt
uname -r; grep PRETTY /etc/os-release
cuda=$(readlink -f /usr/local/cuda); echo "cuda: $cuda"
cudnn=$(python3 -c 'import nvidia.cudnn; print(list(nvidia.cudnn.__path__)[0] + "/lib")' 2>/dev/null)
cupti=$(dirname "$(timeout 20 find /usr/local/cuda/ /opt -name 'libcupti.so.13*' 2>/dev/null | head -1)")
echo "cudnn: $cudnn  cupti: $cupti"
# Only the carried libraries this machine lacks go on the search path.
mkdir -p $W/deps
for f in "$B"/deps/*; do
    ldconfig -p | grep -q "^\s*$(basename "$f") " || cp "$f" $W/deps/
done
echo "carried libraries used: $(ls $W/deps | tr '\n' ' ')"
export LD_LIBRARY_PATH=$W/deps:$cuda/lib64:$cuda/extras/CUPTI/lib64:$cupti:$cudnn
[ -n "${VT_SMOKE_SIM:-}" ] && export LD_LIBRARY_PATH=$VT_SMOKE_SIM:$LD_LIBRARY_PATH  # a dry run on the simulated device
P=$B/lib/libvramtrace.so
ldd $P $B/lib/libvramtrace_cupti.so $B/bin/train | grep 'not found'

log "corpus and clients: each plain, then under the preload"
run2() { # run2 NAME SECONDS PROGRAM ARGS...
    local n=$1 s=$2; shift 2
    step "$n.plain" "$s" "$@"
    step "$n.traced" "$s" env VRAMTRACE_OUTPUT=$W/$n.vtrace LD_PRELOAD=$P "$@"
}
# Not corpus_failures: it asks for 4 TiB of managed memory, which a real GPU
# may grant (the H200 did) and which the device tool's README warns can hang
# the GPU. Not producer_consumer and set_device: they need the simulated
# device's size (640 MiB, to fail at 128 MiB) and its two devices.
for c in thread_pool storm first_calls async_streams mempool vmm managed_pitch_3d host_memory \
         ctor_atexit device_reset contexts bad_frees wrong_frees tiny arrays graphs \
         per_thread_stream graph_memory graph_pool; do
    run2 corpus_$c 60 $B/bin/corpus_$c
done
# Stream capture (added after the H200 sessions): the programs check the
# driver's answers against the simulated device's rules (exit 1 on a surprise)
# (plain too since session 30, whose first run crashed under the preload only)
step corpus_graphs_random.plain 60 $B/bin/corpus_graphs_random 1 600
step corpus_graphs_random.traced 60 env VRAMTRACE_OUTPUT=$W/corpus_graphs_random.vtrace \
    CORPUS_CAPTURED=$W/corpus_graphs_random.captured.txt LD_PRELOAD=$P \
    $B/bin/corpus_graphs_random 1 600
# Built for the per-thread default stream (added in session 28, after the
# H200 sessions): the real runtime's and driver's _ptsz entry points
step corpus_graphs_random_ptsz.traced 60 env VRAMTRACE_OUTPUT=$W/corpus_graphs_random_ptsz.vtrace \
    CORPUS_CAPTURED=$W/corpus_graphs_random_ptsz.captured.txt LD_PRELOAD=$P \
    $B/bin/corpus_graphs_random_ptsz 4 600
run2 corpus_dlopen 60 $B/bin/corpus_dlopen_main $B/lib/libcorpus_alloc.so
for c in static_cudart device_query device_query_drv vmm_mmap; do
    run2 client_$c 60 $B/bin/client_$c
done

log "fork: t_fork exits 0 only where a child forked before its parent's first CUDA call allocates and one forked after gets error 3 from every call (the sim's model, sim/README.md \"Fork\"); under the preload its session starts before that first call, so the preload (and CUPTI) must not initialise CUDA there"
run2 t_fork 60 $B/bin/t_fork
step t_fork.cupti 60 env VRAMTRACE_CUPTI=1 VRAMTRACE_OUTPUT=$W/t_fork.cupti.vtrace LD_PRELOAD=$P \
    $B/bin/t_fork

log "probes: the driver's answers (tests/gpu/probe_sim.py compares the sim's with them)"
for p in probe_driver probe_pool probe_context probe_graphmem probe_graphpool probe_graphgive; do
    timeout 60 $B/bin/$p >$W/$p.txt 2>$W/$p.err; echo "probe rc $?" >>$W/$p.txt
    echo "$p: $(wc -l <$W/$p.txt) lines"
done

log "CUPTI, opt-in (cupti/README.md, Status): its reports must equal the runs above"
for c in tiny storm host_memory; do
    step corpus_$c.cupti 60 env VRAMTRACE_CUPTI=1 VRAMTRACE_OUTPUT=$W/corpus_$c.cupti.vtrace \
        LD_PRELOAD=$P $B/bin/corpus_$c
done
step client_static_cudart.cupti 60 env VRAMTRACE_CUPTI=1 \
    VRAMTRACE_OUTPUT=$W/client_static_cudart.cupti.vtrace LD_PRELOAD=$P $B/bin/client_static_cudart

log "train --backend cuda (the DCGAN's CUDA C kernels and cuDNN)"
run2 train_64 120 $B/bin/train --backend cuda --synthetic --image-size 64 --batch 64 --steps 20 \
    --log-every 5 --samples $W/train_64.png
# A second plain run: cuDNN's backward algorithms are not deterministic, so
# losses may differ between two plain runs too (allocator numbers may not).
step train_64.plain2 120 $B/bin/train --backend cuda --synthetic --image-size 64 --batch 64 \
    --steps 20 --log-every 5
run2 train_oom 120 $B/bin/train --backend cuda --memory-only --synthetic --image-size 256 \
    --batch 16384 --steps 2
run2 bench_alloc 60 $B/bin/alloc_touch_free 400 8

log "PyTorch's allocator on the real GPU (run_scenario.py --real)"
here=$(cd "$(dirname "$0")/.." && pwd)
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
# graphs_1 and graphs_4_tensors (CUDA graphs; the second's captures are graph
# memory nodes) were added in sessions 27 and 29, after the H200 sessions.
for s in graphs_1 graphs_4_tensors graphs_5_abort dcgan_64_b256 dcgan_64_b256_tensors seed004_linear_b1024 empty_cache stream_dataset \
         dcgan_256_b16384_oom vary_shapes_expandable; do
    [ $(( $(date +%s) - t0 )) -lt 330 ] || { echo "skipped torch_$s: time"; continue; }
    step torch_$s 120 python3 "$here/pytorch/run_scenario.py" --real --vramtrace $B/bin/vramtrace \
        --python python3 --work $W/torch "$s"
    tail -n 12 $W/torch_$s.out
done
# a PyTorch process killed by SIGKILL: its trace recovered from the spill file
step torch_killed 120 python3 "$here/pytorch/killed.py" --real --vramtrace $B/bin/vramtrace \
    --python python3 --work $W/torch_killed
tail -n 4 $W/torch_killed.out
log "done in $(( $(date +%s) - t0 )) s"
tar czf "$O/gpu.tar.gz" -C $W . && ls -la "$O"
