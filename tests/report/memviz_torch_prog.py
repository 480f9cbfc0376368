"""Allocate like a few training steps (argv[2] of them, default 3) that
retain a tensor each, then a large tensor, and dump PyTorch's own snapshot
(the ground truth of memviz_torch_test.sh) to argv[1]."""
import pickle
import sys

import torch

torch.cuda.memory._record_memory_history(max_entries=100000)
keep = []
for step in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    acts = [torch.empty((64, 128, 32, 32), device="cuda") for _ in range(6)]
    keep.append(torch.empty((1 << 20,), device="cuda"))
    del acts
big = torch.empty((256 << 20) // 4, device="cuda")
snap = torch.cuda.memory._snapshot()
with open(sys.argv[1], "wb") as f:
    pickle.dump(snap, f)
print("reserved", torch.cuda.memory_reserved(), "allocated", torch.cuda.memory_allocated())
