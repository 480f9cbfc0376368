#!/usr/bin/env bash
# projection_test.sh VRAMTRACE TRAIN SIMLIB: the growth projection against
# the step in which the GAN trainer, run on without vramtrace, runs out of
# memory (train --retain-history keeps each step's activations), from a
# recording of half as many steps: within 10 %. Two configurations of a sweep
# of random ones (session 20) that the projection got wrong:
# * the direct allocator (a cudaMalloc per tensor): the driver takes 2 MiB
#   multiples for 2 MiB and more, so the device fills faster than the
#   allocated bytes grow (projected step 97 for a failure in step 63);
# * the caching allocator with --checkpoint --early-free: its free blocks
#   fragment and its segments grow 76.6 MiB a step where it hands out 69.9
#   (projected 53 for 48).
# The projection now follows the device memory the reserved bytes take
# (report/model.c, project_reserved), and so does the preload's exit line
# (interpose/iterfit.c: it projected 98 for 63). A wrong truth (the failing
# step 20 % later) must fail the check.
set -u
VT=$1
TRAIN=$2
SIMLIB=$3
. "$(dirname "$0")/../lib.sh"

# case NAME MEMORY TRAIN-ARGS...: the truth, the half-length recording, the check
case_() {
    name=$1 mem=$2
    shift 2
    out=$(env LD_LIBRARY_PATH="$SIMLIB" VRAMTRACE_SIM_DEVICE=t4 VRAMTRACE_SIM_MEMORY="$mem" \
        timeout 300 "$TRAIN" --synthetic --memory-only --retain-history --log-every 1000 \
        --steps 3000 "$@" 2>&1)
    truth=$(printf '%s\n' "$out" | sed -n 's/.*out of memory at step \([0-9]*\).*/\1/p')
    [ -n "$truth" ] || {
        fail "$name: the long run did not run out of memory: $(printf '%s' "$out" | tail -2)"
        return
    }
    steps=$((truth / 2))
    VRAMTRACE_SIM_MEMORY=$mem timeout 300 "$VT" run --sim=t4 --no-symbolize \
        -o "$T/$name.vtrace" -- "$TRAIN" --synthetic --memory-only --retain-history \
        --log-every 1000 --steps "$steps" "$@" >"$T/$name.out" 2>"$T/$name.err" ||
        {
            fail "$name: the recording of $steps steps: exit $?"
            return
        }
    timeout 120 "$VT" report "$T/$name.vtrace" --json "$T/$name.json" -q ||
        fail "$name: report: exit $?"
    check "$name" "$truth" "$steps" || fail "$name: projection more than 10 % from step $truth"
    if check "$name" $((truth * 6 / 5)) "$steps" >/dev/null; then
        fail "$name: a wrong truth (step $((truth * 6 / 5))) passed the check"
    fi
}

# check NAME TRUTH STEPS: the report's projection and the preload's exit
# line's within 10 % of TRUTH
check() {
    python3 - "$T/$1.json" "$T/$1.err" "$2" "$3" <<'PY'
import json, re, sys
rep = json.load(open(sys.argv[1]))
line = re.search(r"^vramtrace: GROWING.*projected at train_step (\d+)", open(sys.argv[2]).read(),
                 re.M)
truth, steps = int(sys.argv[3]), int(sys.argv[4])
proj = rep["total_growth"]["projected_oom_iteration"]
exit_proj = int(line.group(1)) if line else None
print(f"{steps} steps recorded: out of memory projected at step {proj} (report), "
      f"{exit_proj} (exit line); the trainer runs out in step {truth}")
sys.exit(0 if all(p and abs(p - truth) <= truth / 10 for p in (proj, exit_proj)) else 1)
PY
}

case_ direct 4GiB --image-size 32 --batch 66 --checkpoint --allocator direct
case_ fragmented 4GiB --image-size 64 --batch 27 --checkpoint --early-free
[ "$fails" -eq 0 ] && echo "projection_test: ok"
exit $((fails > 0))
