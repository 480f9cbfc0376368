"""Batches that grow for a few steps, then stay (variable sequence lengths,
a warm-up): each step's activations are freed at its end, so nothing is kept
from one step to the next, yet PyTorch's cache takes a new, larger segment
whenever a batch is larger than any before. PyTorch's memory_allocated() at
each step's end (the truth: what tensors hold) is written to the stats.
    sc_warmup.py BATCH_MIB,BATCH_MIB,...   (each step: 4 blocks of BATCH_MIB)"""
import sys

import torch
import torchscen


def body(st):
    params = torch.empty(10 << 20, device="cuda")
    st.d["step_allocated"] = []
    for step, mib in enumerate(int(x) for x in sys.argv[1].split(",")):
        torch.cuda.nvtx.range_push("step")
        acts = [torch.empty((mib << 20) // 4, device="cuda") for _ in range(4)]
        del acts
        torch.cuda.nvtx.range_pop()
        st.d["step_allocated"].append(torch.cuda.memory_allocated())
        print(f"step {step} batch {mib} MiB")
    del params
    st.snapshot()


torchscen.main(body)
