"""The seed's retained tensors: every step's generator output is appended to
a Python list (a history kept on the GPU), so memory grows each step until
the allocator runs out.    sc_retained.py BATCH STEPS"""
import sys

import torch
import torchscen


def body(st):
    batch, steps = int(sys.argv[1]), int(sys.argv[2])
    history = []
    for step in range(steps):
        with torch.cuda.nvtx.range("step"):
            torchscen.train_step(batch, 64)
            with torch.cuda.nvtx.range(torchscen.here("history.append(")):
                history.append(torch.empty((batch, 3, 64, 64), device="cuda"))  # retained
        print(f"step {step} kept {len(history)}")


torchscen.main(body)
