"""Shared by the PyTorch scenarios (tests/pytorch/sc_*.py): the DCGAN's layer
shapes, a training step's memory life with torch.empty and no kernels, and the
record of PyTorch's own numbers that run_scenario.py holds vramtrace's report
against.

Every scenario prints the same lines with and without vramtrace; PyTorch's
numbers go to the JSON file named by TORCHSCEN_STATS (not stdout), written at
exit and at an out-of-memory error.
"""
import json
import linecache
import os
import sys

import torch

FLOAT_BYTES = 4


def dcgan_shapes(batch, image, nz=100, ngf=64, nc=3):
    """Activation shapes of the DCGAN generator then discriminator (the
    PyTorch DCGAN example's layers: ConvTranspose/Conv + BatchNorm + ReLU /
    LeakyReLU, 4x4 up to image x image, channels halving/doubling by 2)."""
    stages = image.bit_length() - 3  # 4 -> image in stages doublings
    gen = [(batch, nz, 1, 1)]
    for i in range(stages + 1):
        side = 4 << i
        ch = nc if i == stages else ngf * (1 << (stages - 1 - i))
        gen.append((batch, ch, side, side))
    disc = []
    for i in range(stages):
        side = image >> (i + 1)
        disc.append((batch, ngf * (1 << i), side, side))
    disc.append((batch, 1, 1, 1))
    return gen, disc


def train_step(batch, image, keep=None):
    """One step's activations in forward order (each layer: its output and
    the BatchNorm/activation output autograd keeps), then gradients in
    backward order while the activations are released. keep: a list that gets
    the step's loss tensor (a retained tensor, as `losses.append(loss)`)."""
    gen, disc = dcgan_shapes(batch, image)
    acts = []
    for shape in gen + disc:
        acts.append(torch.empty(shape, device="cuda"))
        acts.append(torch.empty(shape, device="cuda"))
    loss = torch.empty((128,), device="cuda")  # per-sample losses of a 128 slice
    grad = None
    while acts:
        out = acts.pop()
        acts.pop()
        grad = torch.empty(out.shape, device="cuda")
        del out
    del grad
    if keep is not None:
        keep.append(loss)


def oom_text(e):
    """PyTorch's OutOfMemoryError message, first line."""
    return str(e).splitlines()[0] if str(e) else ""


class Stats:
    """PyTorch's numbers for the checker: memory_stats() peaks, the snapshot's
    segments, the OOM message."""

    def __init__(self):
        self.d = {"torch": torch.__version__, "alloc_conf": os.environ.get(
            "PYTORCH_CUDA_ALLOC_CONF", "")}

    def capture(self):
        s = torch.cuda.memory_stats()
        for k in ("reserved_bytes.all.peak", "allocated_bytes.all.peak",
                  "reserved_bytes.all.current", "allocated_bytes.all.current",
                  "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"):
            if k in s:
                self.d[k] = s[k]
        self.d["memory_reserved"] = torch.cuda.memory_reserved()
        self.d["max_memory_reserved"] = torch.cuda.max_memory_reserved()

    def snapshot(self):
        if "cudaMallocAsync" in self.d["alloc_conf"]:
            return  # that backend keeps no snapshot (PyTorch raises)
        snap = torch.cuda.memory._snapshot()
        segs = snap.get("segments", [])
        self.d["snapshot_segments"] = len(segs)
        self.d["snapshot_segment_bytes"] = sum(s["total_size"] for s in segs)
        self.d.update(segment_sizes(segs))  # below main: recorded traces hold these lines

    def oom(self, e):
        self.d["oom_message"] = str(e)
        self.capture()
        # memory_stats() at the failure (capture() at exit overwrites the
        # top-level keys once the failed step's tensors are gone). With
        # backend:cudaMallocAsync reserved_bytes is the pool's
        # ReservedMemCurrent and allocated_bytes its UsedMemCurrent.
        self.d["at_oom"] = {k: self.d[k] for k in ("reserved_bytes.all.current",
                                                   "allocated_bytes.all.current") if k in self.d}

    def write(self):
        path = os.environ.get("TORCHSCEN_STATS")
        if path:
            with open(path, "w") as f:
                json.dump(self.d, f, indent=1)


def main(body):
    """Run body(stats); exit 1 after a CUDA out-of-memory error (as an
    uncaught one would), 0 otherwise. stdout is the same with and without
    vramtrace."""
    st = Stats()
    torch.cuda.init()
    rc = 0
    try:
        body(st)
    except torch.cuda.OutOfMemoryError as e:
        print("OutOfMemoryError:", oom_text(e).split(".")[0])
        st.oom(e)
        rc = 1
    st.capture()
    st.write()
    sys.stdout.flush()
    sys.exit(rc)


def here(what):
    """'file:line what': the first line at or after the caller's that starts
    with `what`, as an NVTX range name that puts the script line into
    vramtrace's report (its stacks are native frames, not Python's)."""
    f = sys._getframe(1)
    path, line = f.f_code.co_filename, f.f_lineno
    while linecache.getline(path, line) and not linecache.getline(path, line).strip().startswith(
            what):
        line += 1
    return f"{os.path.basename(path)}:{line} {what}"


def _with_host_stats(snapshot):
    """Stats.snapshot, plus the pinned-memory caching allocator's blocks
    (torch.cuda.host_memory_stats, PyTorch 2.5+). Added here at the end of
    the file so that the lines the GPU fixtures recorded (tests/gpu,
    check_recorded.py pyframes) stay where they were."""
    def snapshot_and_host(self):
        snapshot(self)
        if hasattr(torch.cuda, "host_memory_stats"):
            self.d["host_allocated_bytes"] = torch.cuda.host_memory_stats().get(
                "allocated_bytes.current", 0)
    return snapshot_and_host


Stats.snapshot = _with_host_stats(Stats.snapshot)


def segment_sizes(segs):
    """The snapshot's segment sizes, and the segments of CUDA graphs' private
    pools (segment_pool_id other than (0, 0), the default pool): what their
    captures allocated. Defined after main so that the lines above keep their
    numbers (tests/gpu's recorded traces name them)."""
    priv = [s for s in segs if tuple(s.get("segment_pool_id") or (0, 0)) != (0, 0)]
    return {"snapshot_segment_sizes": sorted(s["total_size"] for s in segs),
            "snapshot_private_pool_segments": len(priv),
            "snapshot_private_pool_bytes": sum(s["total_size"] for s in priv)}
