"""A history of pinned host tensors: each step (NVTX range "step") makes a
device temporary and pins a host tensor of 8, 16 or 32 MiB (powers of two,
so PyTorch's pinned-memory allocator takes exactly that) that it keeps;
the pinned bytes the script holds at each step's end are written
("step_pinned"): the series vramtrace's host growth must fit.
    sc_pinned.py SEED STEPS"""
import random
import sys

import torch
import torchscen


def body(st):
    rng, steps = random.Random(int(sys.argv[1])), int(sys.argv[2])
    kept = []
    st.d["step_pinned"] = []
    for n in range(steps):
        with torch.cuda.nvtx.range("step"):
            t = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
            kept.append(torch.empty(rng.choice((8, 16, 32)) << 20, dtype=torch.uint8).pin_memory())
            del t
        st.d["step_pinned"].append(sum(k.nbytes for k in kept))
    print(f"steps {steps} kept {len(kept)}")


torchscen.main(body)
