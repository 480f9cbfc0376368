#!/usr/bin/env python3
"""Compare vramtrace's --memory-viz export of a PyTorch run with PyTorch's own
torch.cuda.memory._snapshot() taken by the program (memviz_torch_prog.py) at
its end, after its peak: the segments (cudaMalloc'd chunks of PyTorch's
caching allocator: address, total_size, device) and the order and sizes of
the segment_alloc / segment_free actions must be the same. (PyTorch's blocks
inside segments are its own bookkeeping, not visible to vramtrace without
NVTX Mem regions: each exported segment is one block.)

usage: memviz_torch_cmp.py OURS.pickle TORCH.pickle   exit 0 same, 1 differ."""
import pickle
import sys


def segs(d):
    return sorted((s["device"], s["address"], s["total_size"]) for s in d["segments"])


def seg_actions(d):
    return [(e["action"], e["addr"], e["size"]) for t in d["device_traces"] for e in t
            if e["action"] in ("segment_alloc", "segment_free")]


def main():
    ours = pickle.load(open(sys.argv[1], "rb"))
    torch = pickle.load(open(sys.argv[2], "rb"))
    bad = []
    if segs(ours) != segs(torch):
        bad.append(f"segments differ:\n  ours  {segs(ours)}\n  torch {segs(torch)}")
    if seg_actions(ours) != seg_actions(torch):
        bad.append(f"segment actions differ:\n  ours  {seg_actions(ours)}\n"
                   f"  torch {seg_actions(torch)}")
    for b in bad:
        print("memviz_torch_cmp: " + b)
    if not bad:
        print(f"memviz_torch_cmp: ok: {len(segs(ours))} segments, "
              f"{sum(s[2] for s in segs(ours))} B, as PyTorch's _snapshot()")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
