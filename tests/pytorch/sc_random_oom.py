"""A seeded random mix of PyTorch allocations on a device too small for it:
out-of-memory errors are caught and the program goes on (frees, retries
smaller, empties the cache), so that every failure vramtrace reports is held
against PyTorch's own state at that failure on patterns nobody chose.

Each operation runs inside an NVTX range "op N" (vramtrace records the range
of each failed allocation). For every OutOfMemoryError the script writes,
to the stats' "ooms" list: the operation, PyTorch's OOM observer's numbers
(the size it asked the device for, the device's total and free bytes:
c10/cuda/CUDACachingAllocator.cpp, oom_observers_; backend:cudaMallocAsync
has no observer), torch.cuda.mem_get_info() and memory_stats()'s
allocated and reserved bytes at the error, and whether the program's next
allocation is a retry of the same request ("retried"). At the end of each
"op N" range it writes the thread's prefix, PyTorch's allocated and
reserved bytes (all devices) and the bytes of the tensors it holds to
"op_ends" (PyTorch keeps no statistics under PYTORCH_NO_CUDA_MEMORY_CACHING=1,
whose out-of-memory error is an AcceleratorError: caught too), and each error records how many
op ends came before it ("ends_before"): the ranges are named by number, so
vramtrace takes them as iterations (trace/vtrace.h, vt_range_stem), and
its leak verdict is held against these bytes.

    sc_random_oom.py SEED OPS [DEVICES [THREADS]]

DEVICES (default 1): each allocation goes to a device drawn at random;
mem_get_info() and memory_stats() are then that device's. THREADS (default
1): that many threads take turns, one operation each (ranges "op tK.N").
"""
import random
import sys
import threading

import torch
import torchscen


def size_bytes(rng):
    """Log-uniform from 512 B to 768 MiB."""
    return max(512, int(2 ** rng.uniform(9, 29.6)))


class Observer:
    """PyTorch's OOM observer: the device's view at each raised OOM."""

    def __init__(self):
        self.last = None
        try:
            torch._C._cuda_attach_out_of_memory_observer(self.observe)
        except RuntimeError:  # backend:cudaMallocAsync has none
            pass

    def observe(self, device, alloc, total, free):
        self.last = {"device": device, "alloc": alloc, "total": total, "free": free}


def alloc(st, obs, live, op, nbytes, dev):
    """One allocation of nbytes on device dev; on OOM record PyTorch's
    state. True if made."""
    try:
        live.append(torch.empty(nbytes, dtype=torch.uint8, device=f"cuda:{dev}"))
        return True
    except (torch.cuda.OutOfMemoryError, torch.AcceleratorError) as e:
        # under PYTORCH_NO_CUDA_MEMORY_CACHING=1 PyTorch's uncached_allocate
        # raises cudaErrorMemoryAllocation as an AcceleratorError
        if not isinstance(e, torch.cuda.OutOfMemoryError) and "out of memory" not in str(e):
            raise
        s = torch.cuda.memory_stats(dev)
        free, total = torch.cuda.mem_get_info(dev)
        st.d["ooms"].append({
            "op": str(op), "device": dev, "request": nbytes, "observer": obs.last,
            "allocated": s["allocated_bytes.all.current"],
            "reserved": s["reserved_bytes.all.current"], "held": held(live, dev),
            "free": free, "total": total, "message": str(e).split("\n")[0][:400]})
        st.d["ooms"][-1]["ends_before"] = len(st.d["op_ends"])
        obs.last = None
        return False


def held(live, dev=None):
    """The bytes of the tensors the script holds (on device dev): the truth
    where PyTorch keeps no statistics (PYTORCH_NO_CUDA_MEMORY_CACHING=1)."""
    return sum(t.nbytes for t in live if dev is None or t.device.index == dev)


def op_end(st, live, prefix, devices):
    """An "op N" range ended: PyTorch's bytes then (all devices), and the
    script's own."""
    st.d["op_ends"].append([prefix, sum(torch.cuda.memory_allocated(d) for d in range(devices)),
                            sum(torch.cuda.memory_reserved(d) for d in range(devices)),
                            held(live)])


def run_ops(st, obs, rng, live, counts, ops, devices, prefix, turn):
    """ops operations drawn from rng; turn(op) waits for this thread's turn
    and returns the function that passes it on."""
    for op in range(ops):
        done = turn(op)
        label = f"{prefix}{op}"
        kind = rng.choices(("alloc", "free", "empty"), (55, 40, 5))[0]
        retry = False
        torch.cuda.nvtx.range_push(f"op {label}")
        if kind == "alloc":
            n = size_bytes(rng)
            dev = rng.randrange(devices) if devices > 1 else 0
            if not alloc(st, obs, live, label, n, dev):
                counts["oom"] += 1
                # what a user does next: free something and retry the same
                # request, or give up on it
                st.d["ooms"][-1]["retried"] = bool(live) and rng.random() < 0.4
                if st.d["ooms"][-1]["retried"]:
                    live.pop(rng.randrange(len(live)))
                    torch.cuda.nvtx.range_pop()
                    op_end(st, live, prefix, devices)
                    torch.cuda.nvtx.range_push(f"op {label} retry")
                    counts["retried"] += alloc(st, obs, live, f"{label} retry", n, dev)
                    retry = True
        elif kind == "free" and live:
            live.pop(rng.randrange(len(live)))
        elif kind == "empty":
            torch.cuda.empty_cache()
        counts[kind] += 1
        torch.cuda.nvtx.range_pop()  # "op N", or "op N retry" (its end was taken)
        if not retry:
            op_end(st, live, prefix, devices)
        done()


def in_threads(st, obs, seed, ops, devices, live, counts, threads):
    """threads threads take turns, one operation each in a fixed order (the
    same in every run, so stdout is too), on one list of live tensors: a
    tensor is often freed by another thread than the one that made it."""
    cv, state = threading.Condition(), {"turn": 0}

    def turn_of(k):
        def turn(op):
            with cv:
                cv.wait_for(lambda: state["turn"] == op * threads + k)

            def done():
                with cv:
                    state["turn"] += 1
                    cv.notify_all()
            return done
        return turn

    workers = [threading.Thread(target=run_ops, args=(
        st, obs, random.Random(seed * 1000 + k), live, counts, ops // threads, devices,
        f"t{k}.", turn_of(k))) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def body(st):
    seed, ops = int(sys.argv[1]), int(sys.argv[2])
    devices = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    obs = Observer()
    st.d["ooms"], st.d["op_ends"] = [], []
    live = []
    counts = dict.fromkeys(("alloc", "free", "empty", "oom", "retried"), 0)
    if threads > 1:
        in_threads(st, obs, seed, ops, devices, live, counts, threads)
    else:
        run_ops(st, obs, random.Random(seed), live, counts, ops, devices, "",
                lambda op: lambda: None)
    torch.cuda.synchronize()
    st.snapshot()
    print("ops", " ".join(f"{k}={v}" for k, v in counts.items()), "live", len(live))


torchscen.main(body)
