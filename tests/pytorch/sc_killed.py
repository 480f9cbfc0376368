"""sc_killed: a PyTorch process killed by SIGKILL right after its last
allocation, as a notebook's kernel is by the host's out-of-memory killer
(seeds 000 and 001: "a complete kernel reset"). What vramtrace recorded since
its last flush is then only in the trace's spill file; killed.py holds the
recovered trace against PyTorch's own numbers, which this script writes to
the JSON file argv[1] (and syncs) before it kills itself.

usage: sc_killed.py STATS_JSON
"""
import json
import os
import signal
import sys

import torch

MiB = 1 << 20
keep = [torch.empty(n * MiB, dtype=torch.uint8, device="cuda") for n in (100, 30, 7, 1)]
dropped = torch.empty(50 * MiB, dtype=torch.uint8, device="cuda")
del dropped  # back to PyTorch's cache: reserved, no longer allocated
stats = {"reserved": torch.cuda.memory_reserved(), "allocated": torch.cuda.memory_allocated()}
with open(sys.argv[1], "w") as f:
    json.dump(stats, f)
    f.flush()
    os.fsync(f.fileno())
print(f"reserved {stats['reserved']} allocated {stats['allocated']}", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
