"""A memory limit of PyTorch's own: torch.cuda.set_per_process_memory_fraction
caps its caching allocator, which raises OutOfMemoryError when a request
would pass the cap, without a failing CUDA call. vramtrace then sees no
failed allocation; the run still died of out of memory, and the headline
must not call it healthy.
    sc_fraction.py FRACTION"""
import sys

import torch
import torchscen


def body(st):
    torch.cuda.set_per_process_memory_fraction(float(sys.argv[1]))
    keep = []
    for step in range(100):
        keep.append(torch.empty(128 << 20, dtype=torch.uint8, device="cuda"))
        print(f"step {step}")


torchscen.main(body)
