#!/bin/sh
# oom_diag.sh: the in-process OOM diagnosis (interpose/README.md). t_oom runs
# on a 64 MiB simulated device with no context reserve: 24 MiB from
# alloc_weights, 2 x 8 MiB from alloc_activations, then 48 MiB that fails.
# stderr must name the request, device free/total, the live bytes and both
# functions (dladdr); with VRAMTRACE_QUIET=1 stderr has no diagnosis and no
# summary, and the trace is still written. Stdout is the same as without the
# preload in both runs.
#
# usage: oom_diag.sh CHECKER PRELOAD LIBPATH OUTDIR PROGRAM
set -u
checker=$1 preload=$2 libpath=$3 outdir=$4 program=$5
rm -rf "$outdir" && mkdir -p "$outdir" || exit 1
fail() { echo "oom_diag: FAIL: $*" >&2; exit 1; }
export VRAMTRACE_SIM_MEMORY=64MiB VRAMTRACE_SIM_CONTEXT_RESERVE=0

env LD_LIBRARY_PATH="$libpath" "$program" >"$outdir/stdout.plain" 2>"$outdir/stderr.plain" ||
    fail "the program failed without vramtrace"

# run NAME [VAR=VALUE...]: traced run into $outdir/NAME.*; stdout must match.
run() {
    name=$1
    shift
    env "$@" VRAMTRACE_OUTPUT="$outdir/$name.vtrace" VRAMTRACE_SIM_LEDGER="$outdir/$name.ledger" \
        LD_PRELOAD="$preload" \
        LD_LIBRARY_PATH="$libpath" "$program" >"$outdir/$name.stdout" 2>"$outdir/$name.stderr" ||
        fail "$name: exit status $?"
    cmp -s "$outdir/$name.stdout" "$outdir/stdout.plain" || {
        diff "$outdir/stdout.plain" "$outdir/$name.stdout" >&2
        fail "$name: stdout differs with vramtrace"
    }
    [ -f "$outdir/$name.vtrace" ] || fail "$name: no trace"
    "$checker" "$outdir/$name.vtrace" --expect allocs=3 --expect failed=1 \
        --expect failed_errors=2 >/dev/null || fail "$name: trace check failed"
    # with VTI_VRAMTRACE (the tool): the report against the sim's own ledger
    [ -z "${VTI_VRAMTRACE:-}" ] || sh "$(dirname "$0")/../ledger/report_vs_ledger.sh" \
        "$VTI_VRAMTRACE" "$outdir/$name.vtrace" "$outdir/$name.ledger" "$outdir/$name.json" ||
        fail "$name: the report does not match the sim's ledger"
}

has() { grep -qF -- "$2" "$outdir/$1.stderr" || fail "$1: stderr lacks '$2'"; }

run loud
cat "$outdir/loud.stderr" >&2
has loud "vramtrace: OUT OF MEMORY: cudaMalloc of 48.00 MiB failed with error 2 on device 0, free 24.00 MiB of 64.00 MiB"
has loud "live: 40.00 MiB in 3 allocations"
grep -q "1\. 24\.00 MiB in 1 allocation at alloc_weights (t_oom\.c:[0-9]*)" "$outdir/loud.stderr" ||
    fail "loud: the top site is not alloc_weights (t_oom.c:LINE)"
grep -q "2\. 16\.00 MiB in 2 allocations at alloc_activations (t_oom\.c:[0-9]*)" "$outdir/loud.stderr" ||
    fail "loud: the second site is not alloc_activations"
has loud "vramtrace: device 0: peak reserved 40.00 MiB"

# run_mode MODE: t_oom MODE without and with the preload (trace and stderr
# into $outdir/MODE.*); the same stdout both times.
run_mode() {
    env LD_LIBRARY_PATH="$libpath" "$program" "$1" >"$outdir/$1.stdout.plain" 2>/dev/null ||
        fail "$1: the program failed without vramtrace"
    env VRAMTRACE_OUTPUT="$outdir/$1.vtrace" LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libpath" \
        "$program" "$1" >"$outdir/$1.stdout" 2>"$outdir/$1.stderr" || fail "$1: exit status $?"
    cmp -s "$outdir/$1.stdout" "$outdir/$1.stdout.plain" || fail "$1: stdout differs with vramtrace"
    cat "$outdir/$1.stderr" >&2
}

# flat: the allocations and the failure all in one function, each at its
# own line: the sites are that function at each line, not a frame that every
# stack shares (once "requested at __libc_start_main" or "__clone3").
run_mode flat
line() { grep -n "$1" "$(dirname "$0")/t_oom.c" | head -1 | cut -d: -f1; }
w=$(line "cudaMalloc(&w,") a=$(line "cudaMalloc(&a\[i\],") h=$(line "cudaMalloc(&huge, (size_t)48 << 20);")
has flat "requested at flat (t_oom.c:$h) <- main (t_oom.c:"
has flat "1. 24.00 MiB in 1 allocation at flat (t_oom.c:$w) <- main (t_oom.c:"
has flat "2. 16.00 MiB in 2 allocations at flat (t_oom.c:$a) <- main (t_oom.c:"

# twins: two live sites share their culprit, its caller and the next frame
# (layer_alloc <- conv_pass <- block), reached from forward_pass and
# backward_pass: each is named with the frame where they part, the shared
# ones between left out (both read "layer_alloc <- conv_pass").
run_mode twins
l=$(grep -n "cudaMalloc(&p, size)" "$(dirname "$0")/t_oom.c" | sed -n 3p | cut -d: -f1) # layer_alloc's
c=$(line "void \*p = layer_alloc(size);")
f=$(line "block((size_t)24 << 20);") b=$(line "block((size_t)8 << 20);")
has twins "1. 24.00 MiB in 1 allocation at layer_alloc (t_oom.c:$l) <- conv_pass (t_oom.c:$c) <- ... <- forward_pass (t_oom.c:$f)"
has twins "2. 16.00 MiB in 2 allocations at layer_alloc (t_oom.c:$l) <- conv_pass (t_oom.c:$c) <- ... <- backward_pass (t_oom.c:$b)"

# invalid: an allocation call refused for its argument (error 1) before the
# same run: one diagnosis, the out-of-memory one; the invalid call is no OOM.
run_mode invalid
grep -q "invalid: 1" "$outdir/invalid.stdout" || fail "invalid: cudaMallocPitch did not fail with 1"
[ "$(grep -c "OUT OF MEMORY" "$outdir/invalid.stderr")" = 1 ] ||
    fail "invalid: not exactly one OOM diagnosis: $(grep "OUT OF MEMORY" "$outdir/invalid.stderr")"
has invalid "OUT OF MEMORY: cudaMalloc of 48.00 MiB failed with error 2"

# host: pinned host memory that cannot be had: its diagnosis names host
# memory, not device -1 and the current device's free bytes.
env VRAMTRACE_OUTPUT="$outdir/host.vtrace" LD_PRELOAD="$preload" LD_LIBRARY_PATH="$libpath" \
    "$program" host >"$outdir/host.stdout" 2>"$outdir/host.stderr" || fail "host: exit status $?"
grep -q "host: 2" "$outdir/host.stdout" || fail "host: cudaMallocHost did not fail with 2"
has host "OUT OF MEMORY: cudaMallocHost of 16.00 TiB of pinned host memory failed with error 2"
! grep -q "on device -1" "$outdir/host.stderr" || fail "host: the diagnosis names device -1"
# nothing is live at that failure: the request is named at its own line (it
# was "requested at _start+0x21 (t_oom)" until session 26)
has host "requested at main (t_oom.c:$(line "cudaMallocHost(&h,"))"

run quiet VRAMTRACE_QUIET=1
if grep -q "vramtrace" "$outdir/quiet.stderr"; then
    cat "$outdir/quiet.stderr" >&2
    fail "quiet: vramtrace wrote to stderr"
fi
echo "oom_diag: ok"
