#!/usr/bin/env python3
"""Random PyTorch training loops that keep memory each step, against the step
they run out of memory in: vramtrace's growth projection
(total_growth.projected_oom_iteration) and the preload's exit line ("GROWING:
... out of memory projected at step N") held to the truth, the loop run on
without vramtrace until PyTorch raises OutOfMemoryError.

Each seed picks the simulated T4's memory (1-3 GiB), the allocator (PyTorch's
caching allocator or, 60 %, its cudaMallocAsync backend: a CUDA pool whose
free reserve fragments), a model's temporaries (2-12 of 16 KiB to 128 MiB,
some freed as the step goes), a tensor kept every 1-3 steps (64 KiB to 32
MiB) and parameters (1-256 MiB). The loop (PROGRAM, one NVTX range "step" a
step) is recorded twice: for 40 % of the truth's steps, and on to its
failure. Held:
  - the trace of the run that ran out projects the step it ran out in,
    within 3 % (at least one step), both allocators (seeds 13-32, not
    tested: two short pool runs, 21 and 32 steps, were 2 and 5 steps late,
    their reserve's stairs as large as many steps' growth); its exit line,
    which sees the device memory taken at step ends only (not a step's peak
    above its end, nor the blocks inside a caching allocator's segments),
    within 5 % with the pool (up to +3.6 % seen; before session 25 it
    ignored the pool's reserve and said step 16166 for a failure in step
    1669) and 12 % with the caching allocator (seed 7: +10.6 %, its
    segments filled the device 8 steps before it ran out, and PyTorch gave
    56 MiB of its cache back to retry a failed allocation);
  - from 40 % of the steps, the caching allocator's projection within 5 %;
  - from 40 % of the steps, the pool's within a factor of 2.5: its reserve
    grows in irregular stairs as kept tensors split it (seed 11: 544 MiB
    for 500 steps, 1.7 GiB at step 1668), which no fit of the first steps
    foresees (seeds 1-12: -33 % to +102 %), and the report says so in a
    note;
  - from 40 % of the steps, the exit line within the report's bounds;
  - with the pool, the loop without its NVTX range (iterations found by
    call-site pattern, where the recorder does not sample the pool's
    reserve): no out of memory projected, and the note that says why (it
    projected 4 to 50 times the step it ran out in, in pattern iterations
    that are a part of a step); a headline of growth keeps its rate. Before the pool was sampled at iteration ends (trace version 9)
    its projection was off by +53 % to +890 % on every seed, run to its
    failure or not.
With --wrong the truth is 10 % later: every seed must be caught.

usage: projection_random.py --vramtrace V --python P --sim-lib DIR --work DIR
                            --seeds A-B [--wrong]
Exit: 0 held, 1 not, 3 harness error, 77 PyTorch missing (ctest SKIP)."""
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402  tests/seeds.py

PROGRAM = '''import contextlib, random, sys
import torch

seed, steps = int(sys.argv[1]), int(sys.argv[2])
ranges = sys.argv[3:] != ["plain"]
rng = random.Random(seed)
temps = [max(512, int(2 ** rng.uniform(14, 27))) for _ in range(rng.randint(2, 12))]
kept_size = max(512, int(2 ** rng.uniform(16, 25)))
every = rng.choice([1, 1, 1, 2, 3])
params = torch.empty(int(2 ** rng.uniform(20, 28)), dtype=torch.uint8, device="cuda")
history = []
for step in range(steps):
    try:
        with torch.cuda.nvtx.range("step") if ranges else contextlib.nullcontext():
            live = []
            for t in temps:
                live.append(torch.empty(t, dtype=torch.uint8, device="cuda"))
                if rng.random() < 0.3:
                    live.pop(0)
            if step % every == 0:
                history.append(torch.empty(kept_size, dtype=torch.uint8, device="cuda"))
            del live
    except torch.OutOfMemoryError:
        print(f"out of memory in step {step + 1}")
        sys.exit(1)
    print(f"step {step + 1} done")
'''
LONGEST = 4000  # steps: a seed whose loop outlasts this is skipped


def config(seed):
    rng = random.Random(1000 + seed)
    return rng.choice(["1GiB", "2GiB", "3GiB"]), rng.random() < 0.6


def environment(o, memory, pool):
    e = {k: v for k, v in os.environ.items()
         if k not in ("LD_PRELOAD", "VRAMTRACE_OUTPUT", "PYTORCH_CUDA_ALLOC_CONF",
                      "VRAMTRACE_QUIET")}  # the exit line is checked
    e.update({"VRAMTRACE_SIM_MEMORY": memory, "VRAMTRACE_SIM_DEVICE": "t4"})
    if pool:
        e["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    return e


def truth_step(o, d, prog, memory, pool):
    """The step the loop, run alone on the simulated device, raises in."""
    e = environment(o, memory, pool)
    sim = os.path.abspath(o.sim_lib)
    e["LD_LIBRARY_PATH"] = sim
    e["LD_PRELOAD"] = os.path.join(sim, "libcudart.so.13")
    p = subprocess.run([o.python, "-W", "ignore", prog, d["seed"], str(LONGEST)], env=e,
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"^out of memory in step (\d+)$", p.stdout, re.M)
    if p.returncode not in (0, 1) or (p.returncode == 1) != bool(m):
        raise RuntimeError(f"seed {d['seed']}: the loop exited {p.returncode}: {p.stderr[-400:]}")
    return int(m.group(1)) if m else None


def record(o, d, prog, memory, pool, steps, name, *args):
    """A recording of the loop (args: its further arguments) for `steps`
    steps: the report's JSON and the run's stderr."""
    trace = os.path.join(d["dir"], name + ".vtrace")
    cmd = [o.vramtrace, "run", "--sim=t4", "-f", "-o", trace]
    cmd += ["--torch-tensors"] if pool else []
    cmd += ["--", o.python, "-W", "ignore", prog, d["seed"], str(steps), *args]
    e = environment(o, memory, False)  # --torch-tensors sets the backend
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"seed {d['seed']}: vramtrace run exited {p.returncode}: "
                           f"{p.stderr[-400:]}")
    return seeds.report_json(o.vramtrace, "--json", trace + ".json", trace), p.stderr


def projection(o, d, prog, memory, pool, steps, name):
    """The projected steps of a recording of the loop for `steps` steps:
    the report's and the exit line's (None where either projects none)."""
    rep, stderr = record(o, d, prog, memory, pool, steps, name)
    line = re.search(r"^vramtrace: GROWING: .* out of memory projected at step (\d+)$",
                     stderr, re.M)
    return rep["total_growth"]["projected_oom_iteration"], int(line.group(1)) if line else None


def run_seed(o, seed):
    d = {"seed": str(seed), "dir": os.path.join(o.work, str(seed))}
    subprocess.run(["rm", "-rf", d["dir"]], check=True)
    os.makedirs(d["dir"])
    prog = os.path.join(d["dir"], "loop.py")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    memory, pool = config(seed)
    real = truth_step(o, d, prog, memory, pool)
    kind = "pool" if pool else "caching allocator"
    if real is None or real < 12:
        print(f"seed {seed} ({memory}, {kind}): ran out in step {real}: not a growth to project")
        return []
    truth = real * 1.1 if o.wrong else real
    early = max(4, int(real * 0.4))
    within = max(1.0, truth * 0.03)
    line_within = max(1.0, truth * (0.05 if pool else 0.12))
    late = (truth / 2.5, truth * 2.5) if pool else (truth * 0.95, truth * 1.05)
    # (what, steps recorded, the report's bounds, the exit line's)
    checks = [("ran out", real + 20, (truth - within, truth + within),
               (truth - line_within, truth + line_within)),
              (f"{early} steps", early, late, late)]
    errors, said = [], []
    for what, steps, *bounds in checks:
        got = projection(o, d, prog, memory, pool, steps, what.split()[0])
        for who, value, (lo, hi) in zip(("report", "exit line"), got, bounds):
            err = None if value is None else (value - truth) / truth * 100
            said.append(f"{what}: {who} {value}" + ("" if err is None else f" ({err:+.1f} %)"))
            if value is None or not lo <= value <= hi:
                errors.append(f"{memory}, {kind}, truth step {truth:g}: from {what} the {who} "
                              f"projected {value}, not within {lo:.1f} to {hi:.1f}")
    if pool and not o.wrong:
        errors += unprojected(o, d, prog, memory, early)
        said.append(f"{early} steps without NVTX: not projected")
    print(f"seed {seed} ({memory}, {kind}): ran out in step {real}; " + ", ".join(said))
    return errors


def unprojected(o, d, prog, memory, steps):
    """The pool loop without its NVTX range: no projection, the note."""
    rep, _ = record(o, d, prog, memory, True, steps, "plain", "plain")
    got = [("projection", rep["total_growth"]["projected_oom_iteration"], None),
           ("headline's projection", rep["verdict"]["projected_oom_iteration"], -1),
           ("iterations", rep["iteration"]["kind"], "call_site"),
           ("note", any(n.startswith("no out of memory is projected: device 0's memory comes "
                                     "from a stream-ordered pool") for n in rep["notes"]), True)]
    return [f"{memory}, pool, {steps} steps without NVTX: {what} {value!r}, not {want!r}"
            for what, value, want in got if value != want]


if __name__ == "__main__":
    sys.exit(seeds.torch_main(__doc__, run_seed, ("--sim-lib",)))
