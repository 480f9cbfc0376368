"""A seeded random mix of PyTorch memory operations that launch no kernel,
so that vramtrace is held against PyTorch's own numbers on patterns nobody
chose: tensors of 1 B to 48 MiB of several dtypes (both of the allocator's
pools, sizes that split blocks and sizes that get their own segment), frees
in any order, views that keep a storage alive after its tensor is gone,
copies from the host (`.cuda()`), tensors made on a second stream (their own
pool) and handed back to the default one with record_stream, pinned host
tensors, empty_cache() now and then, and what is left alive at exit.

    sc_random.py SEED OPS
"""
import random
import sys

import torch
import torchscen

DTYPES = (torch.uint8, torch.float16, torch.float32, torch.float64)


def size_bytes(rng):
    """Log-uniform from 1 B to 48 MiB."""
    return max(1, int(2 ** rng.uniform(0, 25.6)))


def new_tensor(rng, nbytes):
    dt = rng.choice(DTYPES)
    n = max(1, nbytes // torch.empty((), dtype=dt).element_size())
    return torch.empty(n, dtype=dt, device="cuda")


def body(st):
    seed, ops = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    side = torch.cuda.Stream()
    live, pinned = [], []
    counts = dict.fromkeys(("alloc", "free", "view", "copy", "stream", "pinned", "empty"), 0)
    for _ in range(ops):
        op = rng.choices(("alloc", "free", "view", "copy", "stream", "pinned", "empty"),
                         (40, 30, 8, 6, 8, 4, 4))[0]
        if op == "alloc":
            live.append(new_tensor(rng, size_bytes(rng)))
        elif op == "free" and live:
            live.pop(rng.randrange(len(live)))
        elif op == "view" and live:
            # a view of a tensor's second half replaces it: the storage stays
            i = rng.randrange(len(live))
            live[i] = live[i][live[i].numel() // 2:]
        elif op == "copy":
            live.append(torch.empty(size_bytes(rng) // 4 + 1).cuda())
        elif op == "stream":
            with torch.cuda.stream(side):
                t = new_tensor(rng, size_bytes(rng))
            t.record_stream(torch.cuda.current_stream())
            live.append(t)
        elif op == "pinned":
            pinned.append(torch.empty(size_bytes(rng) // 64 + 1, dtype=torch.uint8,
                                      pin_memory=True))
            if len(pinned) > 4:
                pinned.pop(0)
        elif op == "empty":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        else:
            continue
        counts[op] += 1
    torch.cuda.synchronize()
    del live[: len(live) // 2]
    st.snapshot()
    print("ops", " ".join(f"{k}={v}" for k, v in counts.items()), "live", len(live))


torchscen.main(body)
