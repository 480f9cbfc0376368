"""A seeded random training-like loop: each step (NVTX range "step")
allocates a few temporaries of random sizes and frees them; with the
seed's keep probability one of them is kept across steps (a leak, as a
history list makes), and now and then a kept one is dropped again. Every few
steps an "eval" range allocates as well. PyTorch's memory_allocated() and
memory_reserved() at each step's end are written to the stats
("step_allocated", "step_reserved"), and the bytes of the tensors the
script holds then ("step_tensors"): the series vramtrace's growth fit must
reproduce (docs/report.md, Growth).

With NEST "outer" the whole loop is inside one range "train" (so no
top-level range repeats); with "inner" each step holds "forward" and
"backward" ranges; "both" does both; "numbered" names each step's range by
its number, "iteration0", "iteration1", ... (as Nsight Systems' PyTorch
examples do), with "forward" and "backward" inside; "epochs" names it by
its epoch and its step in the epoch, "epoch 0 step 0" ... "epoch 0 step 7",
"epoch 1 step 0", ... (8 steps an epoch), with "forward" and "backward"
inside.

    sc_random_steps.py SEED STEPS KEEP_PROBABILITY [NEST]
"""
import random
import sys

import torch
import torchscen


def size_bytes(rng):
    """Log-uniform from 512 B to 64 MiB."""
    return max(512, int(2 ** rng.uniform(9, 26)))


def step(rng, kept, keep, inner=False):
    n = rng.randint(1, 6)
    if inner:
        torch.cuda.nvtx.range_push("forward")
    temps = [torch.empty(size_bytes(rng), dtype=torch.uint8, device="cuda")
             for _ in range(n // 2 + 1)]
    if inner:
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
    temps += [torch.empty(size_bytes(rng), dtype=torch.uint8, device="cuda")
              for _ in range(n - n // 2 - 1)]
    if inner:
        torch.cuda.nvtx.range_pop()
    if rng.random() < keep:
        kept.append(temps[rng.randrange(len(temps))])
    if kept and rng.random() < 0.1:
        kept.pop(rng.randrange(len(kept)))
    del temps


def body(st):
    seed, steps, keep = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    nest = sys.argv[4] if len(sys.argv) > 4 else "flat"
    outer, inner = nest in ("outer", "both"), nest in ("inner", "both", "numbered", "epochs")
    rng = random.Random(seed)
    params = torch.empty(size_bytes(rng) * 4, dtype=torch.uint8, device="cuda")
    kept = []
    st.d["step_allocated"], st.d["step_reserved"], st.d["step_tensors"] = [], [], []
    if outer:
        torch.cuda.nvtx.range_push("train")
    for n in range(steps):
        names = {"numbered": f"iteration{n}", "epochs": f"epoch {n // 8} step {n % 8}"}
        torch.cuda.nvtx.range_push(names.get(nest, "step"))
        step(rng, kept, keep, inner)
        torch.cuda.nvtx.range_pop()
        st.d["step_allocated"].append(torch.cuda.memory_allocated())
        st.d["step_reserved"].append(torch.cuda.memory_reserved())
        # the bytes of the tensors this script holds (PyTorch keeps no
        # statistics under PYTORCH_NO_CUDA_MEMORY_CACHING=1)
        st.d["step_tensors"].append(params.nbytes + sum(t.nbytes for t in kept))
        if n % 7 == 6:
            torch.cuda.nvtx.range_push("eval")
            step(rng, [], 0)
            torch.cuda.nvtx.range_pop()
    if outer:
        torch.cuda.nvtx.range_pop()
    print(f"steps {steps} kept {len(kept)}")
    del params
    st.snapshot()


torchscen.main(body)
