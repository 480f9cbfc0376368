#!/usr/bin/env python3
"""PyTorch workers forked without exec (multiprocessing's default "fork"
context on Linux, a Pool started before the parent touches CUDA), each
allocating tensors of random sizes and keeping some across tasks, under
`vramtrace run --sim=t4 --torch-tensors`, against PyTorch's own numbers in
each worker: every worker has its own trace of the run (interpose/README.md
"Fork"), whose peak allocated bytes are the worker's
torch.cuda.max_memory_allocated(), whose bytes live at exit are its
memory_allocated() after its last task and whose allocations are the
tensors it made; the parent, which never touched CUDA, has none.

usage: fork_workers.py --vramtrace V --python P --work DIR --seeds A-B [--wrong]
--wrong adds 512 bytes to one worker's PyTorch peak: exit 0 only if every
seed catches it.
Exit 0 pass, 1 fail, 3 the harness could not run, 77 skip (no torch for P).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402  tests/seeds.py

PROGRAM = '''import json, multiprocessing, os, random, sys
import torch

MiB = 1 << 20
KEEP = []  # tensors a worker keeps across its tasks
STATS = sys.argv[1]


def task(args):
    seed, n = args
    rnd = random.Random(seed)
    made = [torch.empty(rnd.randint(1, 16) * MiB // rnd.choice([1, 2, 4]), dtype=torch.uint8,
                        device="cuda") for _ in range(n)]
    KEEP.extend(t for t in made if rnd.random() < 0.3)
    del made
    global COUNT
    COUNT = globals().get("COUNT", 0) + n
    with open(f"{STATS}.{os.getpid()}", "w") as f:  # the last task's numbers stay
        json.dump({"peak": torch.cuda.max_memory_allocated(),
                   "live": torch.cuda.memory_allocated(), "allocations": COUNT}, f)
    return os.getpid()


if __name__ == "__main__":
    seed = int(sys.argv[2])
    rnd = random.Random(seed)
    pool = multiprocessing.get_context("fork").Pool(rnd.randint(2, 3))
    work = [(seed * 100 + k, rnd.randint(1, 6)) for k in range(rnd.randint(3, 8))]
    pids = pool.map(task, work, chunksize=1)
    pool.close()
    pool.join()
    print(sorted(set(pids)))
'''


def run_seed(o, seed):
    d = os.path.join(o.work, str(seed))
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(d)
    prog, stats = os.path.join(d, "prog.py"), os.path.join(d, "stats")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.run([o.vramtrace, "run", "--sim=t4", "--torch-tensors", "-o", "run.vtrace",
                        "--", o.python, prog, stats, str(seed)],
                       cwd=d, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"seed {seed}: the program exited {p.returncode}: {p.stderr[-600:]}")
    truth = {}
    for name in os.listdir(d):
        if name.startswith("stats."):
            with open(os.path.join(d, name)) as f:
                truth[int(name.split(".")[1])] = json.load(f)
    if o.wrong and truth:
        truth[min(truth)]["peak"] += 512
    rep = seeds.report_json(o.vramtrace, "--json", os.path.join(d, "run.json"),
                            os.path.join(d, "run.vtrace"))
    files = {one["program"]["pid"]: one for one in rep.get("files", [rep])}
    errors = []
    if set(files) != set(truth):
        errors.append(f"traces of pids {sorted(files)}, workers that allocated {sorted(truth)}")
    for pid in sorted(set(files) & set(truth)):
        t, want = files[pid]["totals"], truth[pid]
        got = {"peak": t["peak_allocated_bytes"], "live": t["leaked_bytes"],
               "allocations": t["allocations"]}
        if got != want:
            errors.append(f"worker {pid}: vramtrace {got}, PyTorch {want}")
    return errors


if __name__ == "__main__":
    sys.exit(seeds.torch_main(__doc__, run_seed, ()))
