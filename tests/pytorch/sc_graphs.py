"""A seeded random mix of eager memory operations and CUDA graphs, launching
no kernel: tensors allocated and freed outside any graph; graphs captured
with `torch.cuda.graph` whose captures allocate tensors (some freed inside
the capture, the others kept as the graph's static outputs), each graph with
a private memory pool of its own or sharing an earlier graph's
(`pool=g.pool()`); replays; graphs and their outputs dropped;
`empty_cache()` now and then. With `backend:cudaMallocAsync` each graph is
replayed once when it is made (see capture()), unless `noreplay`: then
PyTorch aborts when a graph never replayed loses its outputs, as it did on
an H200 (tests/gpu/README.md), and the scenario holds vramtrace's failed
free to PyTorch's own warning. PyTorch's caching allocator serves a capture
from the graph's private pool: its segments are `cudaMalloc`ed during the
capture (in relaxed capture mode) and stay reserved while the graph lives.

    sc_graphs.py SEED OPS [oom|noreplay]

oom: tensors of 64 to 256 MiB kept now and then too, until an eager
allocation runs out of memory (captures are made only while 256 MiB are
free, so that none fails); at the OutOfMemoryError the snapshot's
private-pool segments are written (`oom_private_pool_bytes`) before the error
ends the run as an uncaught one would.
"""
import random
import sys

import torch
import torchscen

DTYPES = (torch.uint8, torch.float16, torch.float32)


def size_bytes(rng):
    """Log-uniform from 1 B to 24 MiB."""
    return max(1, int(2 ** rng.uniform(0, 24.6)))


def new_tensor(rng):
    dt = rng.choice(DTYPES)
    n = max(1, size_bytes(rng) // torch.empty((), dtype=dt).element_size())
    return torch.empty(n, dtype=dt, device="cuda")


def capture(rng, graphs):
    """A new graph whose capture allocates 1 to 6 tensors and keeps some;
    its pool is its own or (a third of the time) an earlier live graph's."""
    g = torch.cuda.CUDAGraph()
    pool = rng.choice(graphs)[0].pool() if graphs and rng.random() < 0.33 else None
    kept = []
    with torch.cuda.graph(g, pool=pool):
        made = [new_tensor(rng) for _ in range(rng.randint(1, 6))]
        for t in made:
            if rng.random() < 0.6:
                kept.append(t)
        del made, t
    if torch.cuda.get_allocator_backend() == "cudaMallocAsync" and sys.argv[3:] != ["noreplay"]:
        # Each kept tensor is a graph memory node whose memory only a replay
        # takes; freeing one that no replay took is CUDA_ERROR_INVALID_VALUE
        # (an H200's driver 580, tests/gpu/README.md), which PyTorch's
        # cudaMallocAsync allocator turns into an abort in the tensor's
        # destructor (PyTorch 2.11 on the H200 and 2.15 on the sim), so with
        # that allocator a graph is replayed once when it is made.
        g.replay()
    graphs.append((g, kept))


def body(st):
    try:
        run(st)
    except torch.cuda.OutOfMemoryError:
        snap = torch.cuda.memory._snapshot()
        st.d["oom_private_pool_bytes"] = torchscen.segment_sizes(
            snap.get("segments", []))["snapshot_private_pool_bytes"]
        raise


def run(st):
    seed, ops = int(sys.argv[1]), int(sys.argv[2])
    oom = sys.argv[3:] == ["oom"]
    rng = random.Random(seed)
    live, graphs = [], []
    names = ("alloc", "free", "capture", "replay", "drop", "empty", "big")
    counts = dict.fromkeys(names, 0)
    for _ in range(ops):
        op = rng.choices(names, (40, 30, 8, 10, 6, 3, 4 if oom else 0))[0]
        if op == "capture" and oom and torch.cuda.mem_get_info()[0] < (256 << 20):
            continue
        if op == "big":
            live.append(torch.empty(rng.randint(64, 256) << 20, dtype=torch.uint8, device="cuda"))
        elif op == "alloc":
            live.append(new_tensor(rng))
        elif op == "free" and live:
            live.pop(rng.randrange(len(live)))
        elif op == "capture":
            capture(rng, graphs)
        elif op == "replay" and graphs:
            rng.choice(graphs)[0].replay()
        elif op == "drop" and graphs:
            graphs.pop(rng.randrange(len(graphs)))
        elif op == "empty":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        else:
            continue
        counts[op] += 1
    torch.cuda.synchronize()
    del live[: len(live) // 2]
    del graphs[: len(graphs) // 2]
    st.snapshot()
    print("ops", " ".join(f"{k}={v}" for k, v in counts.items()), "live", len(live),
          "graphs", len(graphs))


torchscen.main(body)
