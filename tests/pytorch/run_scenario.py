#!/usr/bin/env python3
"""PyTorch's real caching allocator on the simulated device, under vramtrace.

Each scenario runs a tests/pytorch/sc_*.py script twice with the same
environment: once on the simulated device alone (its libcudart.so.13
preloaded, as `vramtrace run --sim` does, because the wheel's DT_RPATH would
otherwise pick NVIDIA's runtime) and once under `vramtrace run --sim=t4`.
Exit status and stdout must be identical. Then vramtrace's report is held
against PyTorch's own numbers, which the script wrote to TORCHSCEN_STATS:
memory_stats() peaks, the snapshot's segments, the OutOfMemoryError message.

    run_scenario.py --vramtrace BIN --sim-lib DIR --python PY --work DIR NAME
    run_scenario.py ... --wrong NAME   # PyTorch's numbers perturbed: exit 0 iff caught
    run_scenario.py ... --real NAME    # on a real GPU: no simulated runtime, no --sim
    run_scenario.py --vramtrace BIN --work DIR --recorded RUNDIR NAME
        # no run: RUNDIR/NAME.vtrace and RUNDIR/NAME.torch.json, kept from a
        # run elsewhere (tests/gpu: a real GPU's), held to the same checks;
        # RUNDIR/NAME.stderr, when kept, is the traced run's stderr (a run
        # writes it beside its trace: PyTorch's own warnings are a truth)

Exit: 0 all checks held, 1 a check failed, 77 PyTorch is not installed for
PY (ctest SKIP_RETURN_CODE), 3 the harness could not run.
Python 3.9+ standard library only (PyTorch is needed by PY, not by this).
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import seeds  # noqa: E402  tests/seeds.py
SKIP = 77

# name: (script and arguments, extra environment, vramtrace run options, checks)
SCENARIOS = {
    # The DCGAN's activations at 64x64, batch 256: fits.
    "dcgan_64_b256": (["sc_dcgan.py", "64", "256", "3"], {}, [], ["fits", "reserved", "snapshot"]),
    # 256x256 at batch 64: fits.
    "dcgan_256_b64": (["sc_dcgan.py", "256", "64", "2"], {}, [], ["fits", "reserved", "snapshot"]),
    # 256x256 at batch 1024 on the T4: the seed's OOM, a capacity OOM.
    "dcgan_256_b1024_oom": (["sc_dcgan.py", "256", "1024", "1"], {}, [],
                            ["oom_capacity", "oom_message", "reserved"]),
    # The same OOM on a card of up to about 200 GB (tests/gpu/smoke.sh, --real).
    "dcgan_256_b16384_oom": (["sc_dcgan.py", "256", "16384", "1"], {}, [],
                             ["oom_capacity", "oom_message", "reserved"]),
    # Per-tensor view of the fitting run (backend:cudaMallocAsync).
    "dcgan_64_b256_tensors": (["sc_dcgan.py", "64", "256", "3"], {}, ["--torch-tensors"],
                              ["fits", "allocated", "tensor_count", "tensors_not_cache"]),
    # Seed 004's own model for its batch-1024 warning: a 10-50-2 linear network.
    "seed004_linear_b1024": (["sc_linear.py", "1024", "10"], {}, [],
                             ["fits", "reserved", "snapshot"]),
    # The generator output appended to a list every step: growth, then OOM.
    "retained_list": (["sc_retained.py", "256", "300"], {"VRAMTRACE_SIM_MEMORY": "3GiB"}, [],
                      ["oom_growth", "growth", "growth_python", "reserved"]),
    # The same inside torch.autograd.profiler.emit_nvtx() (a range per
    # operator, none of the script's): operators are not steps (taken as
    # 2100 iterations, "no growth" at R^2 0.51 before); over the call-site
    # pattern the pool's reserve is not sampled, so no projection
    "retained_list_emit_nvtx": (["sc_retained.py", "256", "120", "emit_nvtx"],
                                {"VRAMTRACE_SIM_MEMORY": "3GiB"}, ["--torch-tensors"],
                                ["fits", "allocated", "growth_line", "kept_per_step",
                                 "unprojected_pool", "operator_rows"]),
    # Its wrong twin (run only with --wrong): the kept bytes alone
    "retained_list_emit_nvtx_kept": (["sc_retained.py", "256", "120", "emit_nvtx"],
                                     {"VRAMTRACE_SIM_MEMORY": "3GiB"}, ["--torch-tensors"],
                                     ["kept_per_step"]),
    # A wrong expectation (run only with --wrong): per segment the growing
    # site is the call that found the cache full, not the appending line.
    "retained_list_segment_line": (["sc_retained.py", "256", "300"],
                                   {"VRAMTRACE_SIM_MEMORY": "3GiB"}, [], ["growth_line"]),
    # Same, tensor by tensor: the appending line holds the peak and grows.
    "retained_list_tensors": (["sc_retained.py", "256", "120"], {"VRAMTRACE_SIM_MEMORY": "3GiB"},
                              ["--torch-tensors"],
                              ["fits", "allocated", "append_line", "growth_line",
                               "tensors_not_cache", "projection", "projection_died_exact",
                               "elsewhere"]),
    # The whole dataset .cuda()'d up front, then training: OOM; streamed batches fit.
    "preload_dataset": (["sc_preload.py", "preload"], {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [],
                        ["oom_capacity", "oom_message", "reserved"]),
    "stream_dataset": (["sc_preload.py", "stream"], {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [],
                       ["fits", "reserved", "snapshot", "elsewhere"]),
    # A wrong expectation (run only with --wrong): recorded with --no-symbolize,
    # the trace carries no names, and a report elsewhere calls the cache a leak.
    "stream_dataset_unnamed": (["sc_preload.py", "stream"], {"VRAMTRACE_SIM_MEMORY": "1GiB"},
                               ["--no-symbolize"], ["elsewhere"]),
    # Alternating batch shapes leave part-used segments: OOM with memory
    # reserved but unallocated; expandable_segments:True grows one segment.
    "vary_shapes": (["sc_vary.py"], {"VRAMTRACE_SIM_MEMORY": "2GiB"}, [],
                    ["oom_fragmented", "oom_message", "reserved"]),
    # The same tensor by tensor (backend:cudaMallocAsync): the pool's reserve
    # fragments; vramtrace records the pool's state at the failure.
    "vary_shapes_tensors": (["sc_vary.py"], {"VRAMTRACE_SIM_MEMORY": "2GiB"}, ["--torch-tensors"],
                            ["oom_pool", "allocated"]),
    "vary_shapes_expandable": (["sc_vary.py"], {"VRAMTRACE_SIM_MEMORY": "2GiB",
                                                "PYTORCH_CUDA_ALLOC_CONF":
                                                "expandable_segments:True"}, [],
                               ["fits", "reserved_physical", "snapshot"]),
    # PyTorch's own memory cap: its OOM makes no failing CUDA call; the
    # headline must say the run failed, not that it was healthy.
    "fraction_limit": (["sc_fraction.py", "0.05"], {}, [], ["own_limit_oom", "reserved"]),
    # Seeded random mixes of memory operations (sc_random.py): patterns nobody
    # chose, on the default allocator and tensor by tensor.
    "random_1": (["sc_random.py", "1", "400"], {}, [],
                 ["fits", "reserved", "snapshot", "device_calls", "elsewhere"]),
    "random_2": (["sc_random.py", "2", "400"], {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [],
                 ["fits", "reserved", "snapshot", "device_calls"]),
    "random_3_tensors": (["sc_random.py", "3", "400"], {}, ["--torch-tensors"],
                         ["fits", "allocated", "tensors_not_cache"]),
    # CUDA graphs (sc_graphs.py): captures served from private pools whose
    # segments are cudaMalloc'ed during the capture, replays, graphs dropped.
    "graphs_1": (["sc_graphs.py", "1", "300"], {}, [],
                 ["fits", "reserved", "snapshot", "device_calls", "graph_pools"]),
    "graphs_2": (["sc_graphs.py", "2", "300"], {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [],
                 ["fits", "reserved", "snapshot", "device_calls", "graph_pools"]),
    # The same tensor by tensor (backend:cudaMallocAsync): a capture's
    # cudaMallocAsync makes graph memory nodes, whose memory each replay takes
    # (PyTorch instantiates with AUTO_FREE_ON_LAUNCH); PyTorch's
    # allocated_bytes counts a captured tensor from its capture on, the device
    # only while a replay holds it, so the truth is the device's ledger.
    "graphs_4_tensors": (["sc_graphs.py", "4", "300"], {}, ["--torch-tensors"],
                         ["fits", "ledger", "tensors_not_cache"]),
    # The same without the replays: PyTorch aborts in a tensor's destructor
    # when its graph never ran (as on an H200 with PyTorch 2.11); the report's
    # last failed free must be the address of PyTorch's last warning
    # ("Attempting uncaptured free of a captured allocation with address"), at
    # a graph allocation node's address, with the process killed by SIGABRT.
    "graphs_5_abort": (["sc_graphs.py", "4", "300", "noreplay"], {}, ["--torch-tensors"],
                       ["aborted_free", "ledger"]),
    # ... until an eager tensor runs out while graphs hold their pools
    "graphs_3_oom": (["sc_graphs.py", "3", "400", "oom"], {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [],
                     ["reserved", "graph_oom"]),
    # Seeded random allocations on a device too small for them, every
    # OutOfMemoryError caught: each failure against PyTorch's state there.
    "random_oom_1": (["sc_random_oom.py", "1", "300"], {"VRAMTRACE_SIM_MEMORY": "2GiB"}, [],
                     ["oom_truth"]),
    "random_oom_2": (["sc_random_oom.py", "2", "300"], {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [],
                     ["oom_truth", "device_calls"]),
    "random_oom_3_tensors": (["sc_random_oom.py", "3", "300"], {"VRAMTRACE_SIM_MEMORY": "2GiB"},
                             ["--torch-tensors"], ["oom_truth"]),
    "random_oom_4_expandable": (["sc_random_oom.py", "4", "300"], {
        "VRAMTRACE_SIM_MEMORY": "1GiB", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
        [], ["oom_truth"]),
    "random_oom_5_two_devices": (["sc_random_oom.py", "11", "300", "2"], {
        "VRAMTRACE_SIM_MEMORY": "1GiB", "VRAMTRACE_SIM_DEVICES": "2"}, [], ["oom_truth"]),
    # three threads taking turns on one list of tensors (frees on other threads)
    "random_oom_6_threads": (["sc_random_oom.py", "1", "300", "1", "3"],
                             {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [],
                             ["oom_truth", "device_calls", "reserved", "snapshot"]),
    "random_oom_7_threads_tensors": (["sc_random_oom.py", "2", "300", "1", "3"],
                                     {"VRAMTRACE_SIM_MEMORY": "1GiB"}, ["--torch-tensors"],
                                     ["oom_truth", "allocated"]),
    # PYTORCH_NO_CUDA_MEMORY_CACHING=1: each tensor its own cudaMalloc,
    # PyTorch's error an AcceleratorError, and no statistics kept
    "random_oom_8_uncached": (["sc_random_oom.py", "5", "300"], {
        "VRAMTRACE_SIM_MEMORY": "1GiB", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, [], ["oom_truth"]),
    # the same on two devices: device 1's first memory
    # sample comes with allocations live there, whose rounding the baseline
    # kept (165,664 B too much outside the recording)
    "random_oom_9_uncached_two_devices": (["sc_random_oom.py", "61", "300", "2", "1"], {
        "VRAMTRACE_SIM_MEMORY": "1GiB", "VRAMTRACE_SIM_DEVICES": "2",
        "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, [], ["oom_truth"]),
    # Seeds a sweep of 50 found wrong (session 20): one call site's segments
    # rose while PyTorch's reserved bytes fell (the cache emptied and
    # refilled by other calls): called leaks, where PyTorch's bytes say
    # capacity (threads; two devices)
    "random_oom_10_threads": (["sc_random_oom.py", "120", "300", "1", "3"],
                              {"VRAMTRACE_SIM_MEMORY": "1GiB"}, [], ["oom_truth", "reserved"]),
    "random_oom_11_two_devices": (["sc_random_oom.py", "117", "300", "2"], {
        "VRAMTRACE_SIM_MEMORY": "1GiB", "VRAMTRACE_SIM_DEVICES": "2"}, [], ["oom_truth"]),
    # A seeded random loop of steps, some of which keep a tensor: vramtrace's
    # growth fit against the same fit of PyTorch's bytes at the steps' ends.
    "random_steps_1": (["sc_random_steps.py", "1", "40", "0.5"], {}, [],
                       ["growth_truth", "reserved", "snapshot"]),
    "random_steps_2_tensors": (["sc_random_steps.py", "2", "40", "0.5"], {}, ["--torch-tensors"],
                               ["growth_truth", "allocated", "pool_reserved"]),
    "random_steps_3_none_kept": (["sc_random_steps.py", "3", "40", "0"], {}, ["--torch-tensors"],
                                 ["growth_truth", "allocated", "pool_reserved"]),
    # a tensor kept in nine steps of ten, of random sizes: stairs, R^2 0.61
    "random_steps_4_stairs": (["sc_random_steps.py", "7", "30", "0.9"], {}, ["--torch-tensors"],
                              ["growth_truth", "allocated", "pool_reserved"]),
    # kept tensors of random sizes until the pool runs out: R^2 0.897, a
    # rise that kept on; the verdict was fragmentation
    "random_steps_6_leak_oom": (["sc_random_steps.py", "52", "2000", "0.5"],
                                {"VRAMTRACE_SIM_MEMORY": "1GiB"}, ["--torch-tensors"],
                                ["leak_truth", "allocated"]),
    # the steps inside one "train" range (no top-level range repeats), and
    # with "forward" and "backward" ranges inside each step as well
    "random_steps_7_outer": (["sc_random_steps.py", "8", "40", "0.5", "outer"], {}, [],
                             ["growth_truth", "reserved"]),
    "random_steps_8_nested_tensors": (["sc_random_steps.py", "9", "40", "0.5", "both"], {},
                                      ["--torch-tensors"], ["growth_truth", "allocated",
                                                            "pool_reserved"]),
    # each step's range named by its number ("iteration0", ...): one range
    "random_steps_9_numbered": (["sc_random_steps.py", "10", "40", "0.7", "numbered"], {}, [],
                                ["growth_truth", "reserved"]),
    # named by epoch and step ("epoch 1 step 0"): one range "epoch <N> step"
    # (until session 26 each epoch's 8 steps were a range of their own, and
    # the report said HEALTHY for 5.0 MB more reserved per step)
    "random_steps_11_epochs": (["sc_random_steps.py", "13", "40", "0.7", "epochs"], {}, [],
                               ["growth_truth", "reserved"]),
    # PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor its own cudaMalloc, no
    # cache (a common debugging setting)
    "random_steps_10_uncached": (["sc_random_steps.py", "11", "40", "0.7"],
                                 {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, [],
                                 ["growth_truth", "tensors_not_cache", "growth_not_cache"]),
    # 200 steps: the fit keeps every fourth step's end (64 samples, halved)
    "random_steps_5_long": (["sc_random_steps.py", "22", "200", "0.7"], {}, [],
                            ["growth_truth", "reserved", "snapshot"]),
    # The parameters on device 0, a history kept on device 1: growth is
    # projected where device 1 fills (projected at step 105 for 232 before)
    "two_devices_growth": (["sc_two_devices.py", "30"], {"VRAMTRACE_SIM_DEVICES": "2"}, [],
                           ["fits", "projection", "projection_died_exact", "projection_device",
                            "reserved_per_device"]),
    # Data parallel on two devices, runs at several --batch: the advice
    # across runs weighs each device's need against its own room (both
    # devices' peak against one device's said 256 was the largest, not 1088)
    "data_parallel_batch": (["sc_data_parallel.py", "--batch", "128", "2"],
                            {"VRAMTRACE_SIM_DEVICES": "2", "VRAMTRACE_SIM_MEMORY": "4GiB"}, [],
                            ["fits", "reserved_per_device", "batch_runs"]),
    # Its wrong twin (run only with --wrong): the advice alone, against the
    # bisected largest batch taken 5 % larger
    "data_parallel_batch_truth": (["sc_data_parallel.py", "--batch", "128", "2"],
                                  {"VRAMTRACE_SIM_DEVICES": "2", "VRAMTRACE_SIM_MEMORY": "4GiB"},
                                  [], ["batch_runs"]),
    # A history of pinned host tensors: host growth, not "no growth"
    "pinned_history": (["sc_pinned.py", "3", "30"], {}, [], ["fits", "host_growth"]),
    # Batches that grow, then stay, nothing kept across steps: PyTorch's cache
    # grows to the largest batch; vramtrace must not call it kept memory.
    "cache_warmup": (["sc_warmup.py", "64,128,192,256,256,256"], {}, [],
                     ["fits", "reserved", "snapshot", "cache_not_kept"]),
    # The same growing on a 4 GiB T4 until PyTorch frees its cache to retry.
    "cache_warmup_retry": (["sc_warmup.py", "64,128,192,256,320,384,448,512,576,640"],
                           {"VRAMTRACE_SIM_MEMORY": "4GiB"}, [],
                           ["fits", "reserved", "cache_not_kept"]),
    # torch.cuda.empty_cache() every step: segments go back each step.
    "empty_cache": (["sc_empty_cache.py", "64", "256", "3"], {}, [],
                    ["fits", "reserved", "released"]),
}


# The seed claim each scenario settles, for docs/scenarios.md (quoted verbatim
# from /work/shared/seeds; scripts/gen_scenarios_md.py --seeds checks the
# quote) and the bundled trainer's scenario it sits beside.
_C004 = ("004_060870a9c5c9ae9b.txt", "This code, while simple, will likely trigger an OOM "
         "error due to the very high batch size of 1024.", "capacity_batch")
_C003 = ("003_7e94842d2192a4a5.txt", "repeated allocation and deallocation of tensors on the "
         "GPU can lead to memory fragmentation, making it difficult to allocate even relatively "
         "small tensors, even if sufficient total VRAM is available", "vary_batch_fragmentation")
CLAIMS = {
    "seed004_linear_b1024": _C004,
    "dcgan_256_b1024_oom": _C004,
    "retained_list": ("004_060870a9c5c9ae9b.txt", "These tensors can accumulate in memory, "
                      "again leading to an eventual OOM.", "retain_history"),
    "retained_list_tensors": ("004_060870a9c5c9ae9b.txt", "These tensors can accumulate in "
                              "memory, again leading to an eventual OOM.", "retain_history"),
    "preload_dataset": ("004_060870a9c5c9ae9b.txt", "This occurs frequently when an entire "
                        "dataset is preloaded into a single tensor in GPU memory",
                        "preload_dataset"),
    "vary_shapes": _C003,
    "vary_shapes_tensors": _C003,
    "vary_shapes_expandable": _C003,
    "empty_cache": ("001_114072b8f3aca488.txt", "`torch.cuda.empty_cache()` is particularly "
                    "important when using a GPU, as it forces the GPU to release unused memory.",
                    "empty_cache"),
}


def fail(msg):
    print("FAIL:", msg)
    return False


def format_size(n):
    """PyTorch's format_size (c10/cuda/CUDACachingAllocator.cpp), used in its
    OutOfMemoryError message: bytes, KiB, MiB or GiB with two decimals."""
    if n <= 1024:
        return f"{n} bytes"
    if n <= 1048576:
        return f"{n / 1024.0:.2f} KiB"
    if n <= 1073741824:
        return f"{n / 1048576.0:.2f} MiB"
    return f"{n / 1073741824.0:.2f} GiB"


class Run:
    """One scenario: both runs, the report, PyTorch's numbers."""

    def __init__(self, o, name):
        self.o, self.name = o, name
        self.script, self.env_extra, self.vt_opts, self.checks = SCENARIOS[name]
        os.makedirs(o.work, exist_ok=True)
        self.base = os.path.join(o.work, name)

    def env(self, stats):
        e = dict(os.environ)
        for k in ("LD_PRELOAD", "VRAMTRACE_OUTPUT", "PYTORCH_CUDA_ALLOC_CONF"):
            e.pop(k, None)
        e.update(self.env_extra)
        e.update({"VRAMTRACE_QUIET": "1", "VRAMTRACE_SIM_DEVICE": "t4", "TORCHSCEN_STATS": stats,
                  "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": HERE})
        if "pool_reserved" in self.checks:  # its exit line is checked too
            del e["VRAMTRACE_QUIET"]
        return e

    def argv(self):
        return [self.o.python, "-W", "ignore", os.path.join(HERE, self.script[0])] + self.script[1:]

    def run_plain(self, args=None):
        """The script without vramtrace (args: other arguments than the
        scenario's, for a second run of the same script)."""
        e = self.env(self.base + (".plain.json" if args is None else ".longer.json"))
        if not self.o.real:
            sim = os.path.abspath(self.o.sim_lib)
            e["LD_LIBRARY_PATH"] = sim + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
            e["LD_PRELOAD"] = os.path.join(sim, "libcudart.so.13")
        if "--torch-tensors" in self.vt_opts:
            e["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
        argv = self.argv() if args is None else self.argv()[:4] + args
        return subprocess.run(argv, env=e, capture_output=True, text=True, timeout=600)

    def run_traced(self):
        trace = self.base + ".vtrace"
        p = self.record(trace)
        self.load(trace, self.base + ".torch.json")
        return p

    def record(self, trace, args=None):
        """The script under `vramtrace run` into trace (args: other arguments
        than the scenario's)."""
        if os.path.exists(trace):
            os.remove(trace)
        sim = [] if self.o.real else ["--sim=t4"]
        argv = self.argv() if args is None else self.argv()[:4] + args
        cmd = [self.o.vramtrace, "run", *sim, *self.vt_opts, "-o", trace, "--"] + argv
        stats = self.base + (".torch.json" if args is None else ".other.json")
        e = self.env(stats)
        if "ledger" in self.checks and not self.o.real and args is None:
            e["VRAMTRACE_SIM_LEDGER"] = self.base + ".ledger.jsonl"
            if os.path.exists(e["VRAMTRACE_SIM_LEDGER"]):
                os.remove(e["VRAMTRACE_SIM_LEDGER"])
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=600)

    def load(self, trace, stats):
        """The report of trace (self.rep) and PyTorch's numbers (self.torch)."""
        self.trace = trace
        rep = self.base + ".report.json"
        q = subprocess.run([self.o.vramtrace, "report", trace, "--json", rep, "-q"],
                           capture_output=True, text=True, timeout=600)
        if q.returncode != 0:
            raise RuntimeError(f"vramtrace report failed: {q.stderr.strip()}")
        with open(rep) as f:
            self.rep = json.load(f)
        if "aborted_free" in self.checks and not os.path.exists(stats):
            self.torch = {}  # the script aborted before writing its numbers
            return
        with open(stats) as f:
            self.torch = json.load(f)


def exit_code(rc):
    """A subprocess's status as a shell gives it (killed by signal N: 128 + N),
    the way `vramtrace run` returns a killed child's."""
    return 128 - rc if rc < 0 else rc


def check_same(plain, traced):
    ok = True
    if exit_code(plain.returncode) != exit_code(traced.returncode):
        ok = fail(f"exit status {plain.returncode} without vramtrace, {traced.returncode} with")
    if plain.stdout != traced.stdout:
        ok = fail(f"stdout differs:\n--- plain\n{plain.stdout}--- traced\n{traced.stdout}")
    print(f"exit {traced.returncode}, {len(traced.stdout.splitlines())} stdout lines, "
          f"{'same' if ok else 'NOT the same'} with and without vramtrace")
    return ok


def size_text(b):
    """b bytes as vramtrace prints them (size/vsize.c, vsize_format)."""
    if b < 1024:
        return f"{b} B"
    v, units = b / 1024, ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    i = 0
    while v >= 1023.995 and i + 1 < len(units):
        v, i = v / 1024, i + 1
    return f"{v:.2f} {units[i]}"


def fatal_oom(rep):
    return next((o for o in rep["ooms"] if o["fatal"]), None)


def check(r, what, tq):
    """One named check of r's report against PyTorch's numbers tq."""
    rep, dev = r.rep, r.rep["devices"][0]
    oom = fatal_oom(rep)
    if what == "fits":
        t = rep["totals"]
        print(f"failed allocations: {t['failed_allocations']} "
              f"({t['recovered_failed_allocations']} recovered by the program)")
        return (oom is None and "oom_message" not in tq) or fail(
            "an out-of-memory error where the run should fit")
    if what == "reserved":
        a, b = dev["peak_reserved_bytes"], tq["reserved_bytes.all.peak"]
        print(f"peak reserved: vramtrace {a}, PyTorch reserved_bytes.all.peak {b}")
        return a == b or fail("peak reserved differs")
    if what == "reserved_physical":
        # expandable_segments: vramtrace sees each cuMemCreate'd page; pages
        # created for a mapping that failed are released again after the
        # cache is trimmed and never counted by PyTorch's reserved_bytes.
        a, b = dev["peak_reserved_bytes"], tq["reserved_bytes.all.peak"]
        print(f"peak physical: vramtrace {a}, PyTorch reserved_bytes.all.peak {b} "
              f"(+{a - b} B of pages created during recovered mapping failures)")
        ok = a >= b and (a == b or rep["totals"]["recovered_failed_allocations"] > 0)
        return ok or fail("peak reserved inconsistent")
    if what == "pool_reserved":
        # backend:cudaMallocAsync: PyTorch's reserved bytes are the pool's;
        # vramtrace samples the pool at NVTX range ends (the pool only grows
        # here, so its last sample, at the last step's end, is its peak)
        a, b = dev["pool_reserved_peak_bytes"], tq["reserved_bytes.all.peak"]
        print(f"pool reserved: vramtrace {a} at most where sampled, PyTorch "
              f"reserved_bytes.all.peak {b}")
        ok = a == b or fail("the pool's reserved bytes differ")
        err = getattr(r, "traced_stderr", None)  # the exit line (not with --recorded)
        want = "device 0: peak reserved "
        line = next((x for x in (err or "").splitlines() if want in x), "")
        if err is not None:
            said = re.search(r"\(stream-ordered pools reserved (.*?) where sampled\)", line)
            print(f"exit line: {line[:140]}")
            ok = (said is not None and said.group(1) == size_text(b) or fail(
                f"the exit line's pools reserved, want {size_text(b)}")) and ok
        return ok
    if what == "allocated":
        a, b = dev["peak_allocated_bytes"], tq["allocated_bytes.all.peak"]
        print(f"peak allocated: vramtrace {a}, PyTorch allocated_bytes.all.peak {b}")
        return a == b or fail("peak allocated differs")
    if what == "elsewhere":
        return check_elsewhere(r)
    if what == "host_growth":
        ys, stride, slope, r2 = step_fit(tq["step_pinned"])
        h, text = rep["host_growth"], rep["verdict"]["text"]
        print(f"pinned bytes held: {slope:.1f} B/step, R^2 {r2:.6f}; vramtrace host_growth "
              f"{h['bytes_per_iteration']:.1f} B/step, R^2 {h['r2']:.6f}")
        ok = (abs(h["bytes_per_iteration"] - slope) <= 1 and abs(h["r2"] - r2) <= 1e-6) or fail(
            "host growth differs from the pinned bytes the script holds")
        return ok and ("pinned host memory grows" in text or fail(f"headline: {text[:160]}"))
    if what == "reserved_per_device":
        a = [d["peak_reserved_bytes"] for d in sorted(rep["devices"], key=lambda d: d["id"])
             if d["id"] >= 0]
        b = tq["device_peak_reserved"]
        print(f"peak reserved per device: vramtrace {a}, PyTorch max_memory_reserved {b}")
        return a == b or fail("a device's peak reserved differs")
    if what == "projection_device":
        dev = rep["total_growth"]["projected_oom_device"]
        print(f"out of memory projected on device {dev} (the history is kept on device 1)")
        return dev == 1 or fail("the projection is not device 1's")
    if what == "snapshot":
        if "snapshot_segments" not in tq:
            return fail("the script took no snapshot")
        live, n = rep["totals"]["leaked_bytes"], rep["totals"]["leaked_allocations"]
        print(f"segments live at exit: vramtrace {n} ({live} B), snapshot "
              f"{tq['snapshot_segments']} ({tq['snapshot_segment_bytes']} B)")
        ok = (live == tq["snapshot_segment_bytes"] and
              (n == tq["snapshot_segments"] or "expandable" in tq["alloc_conf"])) or fail(
            "the snapshot's segments are not what vramtrace has live")
        # All of it is the caching allocator's cache (the snapshot's segments),
        # which the headline must not call a leak of the program's. The
        # allocator is known by its function names: a trace kept from another
        # machine (--recorded) whose PyTorch is not here has none to match.
        named = any(f["function"].startswith("c10::") for lk in rep["leaks"] for f in lk["stack"])
        if r.o.recorded and not named:
            # the report must then say why it cannot tell (a note)
            said = any("cache cannot be told from a leak" in n for n in rep["notes"])
            print("PyTorch's frames are not symbolized here (its libraries are the GPU "
                  f"machine's): its cache cannot be told from a leak; the report says so: {said}")
            return ok and (said or fail("no note that the cache cannot be told from a leak"))
        cached = rep["totals"]["cached_at_exit_bytes"]
        print(f"held at exit as PyTorch's cache: vramtrace {cached} B; headline "
              f"{rep['verdict']['kind']}")
        ok = ok and (cached == tq["snapshot_segment_bytes"] or fail(
            "vramtrace's cached-at-exit bytes are not the snapshot's segments")) and (
            rep["verdict"]["kind"] != "leaked" or fail("a caching allocator's cache called a leak"))
        if "host_allocated_bytes" in tq:
            # pinned host memory: the host allocator's blocks, its own count
            host = rep["totals"]["host_cached_at_exit_bytes"]
            print(f"pinned host memory held at exit as PyTorch's cache: vramtrace {host} B, "
                  f"host_memory_stats() allocated_bytes.current {tq['host_allocated_bytes']} B "
                  f"(host memory live at exit {rep['totals']['host_leaked_bytes']} B)")
            ok = ok and (host == tq["host_allocated_bytes"] == rep["totals"]["host_leaked_bytes"]
                         or fail("the pinned-memory cache is not PyTorch's host allocator's"))
        return ok
    if what == "graph_pools":
        # PyTorch serves a capture from the graph's private pool, whose
        # segments it cudaMallocs during the capture: the segments of private
        # pools at exit (the snapshot's segment_pool_id) are the bytes
        # vramtrace saw allocated during captures and still live
        got, want = dev["captured_at_exit_bytes"], tq.get("snapshot_private_pool_bytes")
        print(f"made during CUDA graph captures and live at exit: vramtrace {got} B; private "
              f"pools' segments in the snapshot {want} B "
              f"({tq.get('snapshot_private_pool_segments')} segments); at the peak reserved "
              f"{dev['captured_at_peak_bytes']} B")
        return (want is not None or fail("the script took no snapshot")) and (
            got == want or fail("the capture's live bytes are not the private pools' segments"))
    if what == "graph_oom":
        # PyTorch raises after its retry (cached blocks freed, private pools
        # of live graphs kept): the fatal failure is that retry, and the
        # private pools' segments in the snapshot taken in the except were
        # live then (nothing is freed between the two)
        want = tq.get("oom_private_pool_bytes")
        got = oom["live_captured_bytes"] if oom else None
        print(f"at the fatal failure, made during CUDA graph captures: vramtrace {got} B; "
              f"private pools' segments at the OutOfMemoryError {want} B; remedy: "
              f"{rep['verdict']['remedy'][:120]}")
        return (want is not None or fail("PyTorch raised no OutOfMemoryError")) and (
            got == want or fail("the captures' live bytes at the failure are not the private "
                                "pools' segments"))
    if what == "own_limit_oom":
        t = rep["totals"]
        kind = rep["verdict"]["kind"]
        print(f"PyTorch: {tq.get('oom_message', '(no OOM)')[:100]}; vramtrace: "
              f"{t['failed_allocations']} failed allocations, headline {kind}: "
              f"{rep['verdict']['text'][:80]}")
        return ("oom_message" in tq or fail("PyTorch raised no out-of-memory error")) and (
            t["failed_allocations"] == 0 or fail("a CUDA call failed: not PyTorch's own cap")) and (
            kind == "exited" or fail(f"headline {kind} for a run that died of out of memory"))
    if what == "aborted_free":
        # PyTorch's own record: its warning before each uncaptured free of a
        # captured allocation; the last one is the free that failed and aborted
        warned = re.findall(r"uncaptured free of a captured allocation with address (0x[0-9a-f]+)",
                            getattr(r, "traced_stderr", ""))
        frees = rep.get("failed_frees") or []
        last = frees[-1] if frees else {}
        sig = rep["program"]["exit"].get("signal")
        kind = rep["verdict"]["kind"]
        print(f"PyTorch's last warned address {warned[-1] if warned else None}; vramtrace's last "
              f"failed free {last.get('call')}({last.get('address')}) error {last.get('error')}, "
              f"graph node {last.get('graph_node')}; killed by signal {sig}; headline {kind}")
        return (warned or fail("PyTorch warned of no uncaptured free")) and (
            frees or fail("vramtrace recorded no failed free")) and (
            int(last.get("address", "0"), 16) == int(warned[-1], 16)
            or fail("the failed free is not at PyTorch's last warned address")) and (
            last.get("graph_node") is True or fail("not flagged a graph allocation node's")) and (
            sig == 6 or fail(f"not killed by SIGABRT ({sig})")) and (
            kind == "failed_free" or fail(f"headline {kind}, not the failed free that ended it"))
    if what == "ledger":
        # the simulated device's own ledger of the traced run: every device
        # allocation and free, peaks, leaks (tests/ledger/check_ledger.py)
        ledger = r.base + ".ledger.jsonl"
        if r.o.real:  # a real GPU keeps no ledger: the trace is kept and held later
            print("ledger: not on a real GPU (the simulated device's own check)")
            return True
        if not os.path.exists(ledger):
            return fail(f"no ledger {ledger} (the simulated device's only)")
        q = subprocess.run([sys.executable, os.path.join(HERE, "..", "ledger", "check_ledger.py"),
                            "--ledger", ledger, "--report", r.base + ".report.json", "--devices",
                            "--pid", str(rep["program"]["pid"])],
                           capture_output=True, text=True, timeout=600)
        print(q.stdout.strip()[-1500:], q.stderr.strip()[-500:])
        return q.returncode == 0 or fail("the report does not match the simulated device's ledger")
    if what == "device_calls":
        # every cudaMalloc and cudaFree of the allocator: memory_stats()'s
        # num_device_alloc / num_device_free against the device kind's
        # accounting (pinned host memory is another kind)
        acc = [a for a in rep["accounting"] if a["kind"] == "device"]
        a = (sum(x["allocations"] for x in acc), sum(x["frees"] for x in acc))
        b = (tq.get("num_device_alloc"), tq.get("num_device_free"))
        print(f"device mallocs and frees: vramtrace {a[0]}, {a[1]}; PyTorch num_device_alloc "
              f"{b[0]}, num_device_free {b[1]}")
        return a == b or fail("device malloc/free counts differ")
    if what == "cache_not_kept":
        # PyTorch's memory_allocated() at each step's end does not grow: no
        # tensor is kept across steps, only the cache grows. vramtrace must
        # not claim kept memory: no plain GROWING headline (its growth is the
        # caching allocator's segments'), no projection, no leak verdict.
        steps = tq.get("step_allocated") or []
        kept = any(b > a for a, b in zip(steps, steps[1:]))
        v = rep["verdict"]
        leaks = [o for o in rep["ooms"] if o["verdict"] == "leak"]
        cache = [g.get("cache_of") for g in rep.get("growth") or []]
        print(f"PyTorch memory_allocated() at step ends: {steps}; vramtrace: headline "
              f"{v['kind']} ({v['text'][:70]}...), growth sites' cache_of {cache}, "
              f"{len(leaks)} leak verdicts")
        claims = ((v["kind"] == "growing" and (v.get("projected_oom_iteration") or -1) >= 0)
                  or bool(leaks))
        return (not kept or fail("the script kept tensors: not this check's case")) and (
            not claims or fail("vramtrace claims memory kept across steps that PyTorch "
                               "says no tensor holds"))
    if what == "tensors_not_cache":
        # backend:cudaMallocAsync: what is live at exit is tensors, no cache
        cached = rep["totals"]["cached_at_exit_bytes"]
        print(f"held at exit as a cache: {cached} B (live at exit {rep['totals']['leaked_bytes']} B)")
        return cached == 0 or fail("tensors counted as a caching allocator's cache")
    if what == "growth_not_cache":
        # every tensor its own allocation: growth is of tensors, projected
        v = rep["verdict"]
        print(f"headline: {v['text'][:110]}")
        return (v["kind"] != "growing" or "segments" not in v["text"]
                and v["projected_oom_iteration"] >= 0) or fail(
            "growth of tensors told as a caching allocator's segments")
    if what == "tensor_count":
        n = rep["totals"]["allocations"]
        print(f"allocations seen: {n}")
        return n > 100 or fail("cudaMallocAsync backend: expected one allocation per tensor")
    if what in ("oom_capacity", "oom_growth", "oom_fragmented"):
        if not oom or "oom_message" not in tq:
            return fail(f"expected an OOM in both (vramtrace: {bool(oom)}, PyTorch: "
                        f"{'oom_message' in tq})")
        want = {"oom_capacity": "capacity", "oom_growth": "leak",
                "oom_fragmented": None}[what]
        print(f"OOM verdict: {oom['verdict']} ({oom['explanation'][:160]})")
        if oom["verdict"] == "capacity" and any(f["function"].startswith("c10::")
                                                 for f in oom["stack"]):
            # segments hide the holes inside them: the remedy must say how to see them
            print(f"remedy: {rep['verdict']['remedy'][:240]}")
            if "--torch-tensors" not in rep["verdict"]["remedy"]:
                return fail("a capacity verdict on PyTorch's segments without the "
                            "--torch-tensors caveat")
        if what == "oom_fragmented":
            m = re.search(r"and (.+?) is reserved by PyTorch but unallocated", tq["oom_message"])
            print(f"PyTorch: {m.group(1) if m else '?'} reserved but unallocated; request "
                  f"{format_size(oom['requested_bytes'])}")
            # vramtrace sees segments only with this allocator: its verdict is
            # capacity (README, Known limits); pinned so that text stays true.
            ok = m is not None or fail("PyTorch's message names no unallocated reserve")
            return (oom["verdict"] == "capacity" or fail(
                f"verdict {oom['verdict']}: update tests/pytorch/README.md")) and ok
        return oom["verdict"] == want or fail(f"verdict {oom['verdict']}, expected {want}")
    if what == "oom_pool":
        return check_oom_pool(oom, tq)
    if what == "oom_truth":
        return check_oom_truth(r, tq)
    if what == "growth_truth":
        return check_growth_truth(r, tq)
    if what == "leak_truth":
        return check_leak_truth(r, tq)
    if what == "oom_message":
        msg = tq.get("oom_message", "")
        tried = re.search(r"Tried to allocate (.+?)\. GPU", msg)
        free = re.search(r"of which (.+?) is free", msg)
        if not oom or not tried or not free:
            return fail(f"no OOM to compare (message: {msg[:120]!r})")
        a, b = format_size(oom["requested_bytes"]), format_size(oom["device_free_bytes"])
        print(f"OOM: vramtrace request {a}, free {b}; PyTorch: Tried to allocate "
              f"{tried.group(1)}, of which {free.group(1)} is free")
        return (a == tried.group(1) and b == free.group(1)) or fail("OOM numbers differ")
    if what == "growth":
        g = rep.get("growth") or []
        top = max((x["bytes_per_iteration"] for x in g), default=0)
        print(f"growth: {top:.0f} B/iteration over {rep['total_growth']['iterations']} iterations")
        return top > 0 or fail("no growing site")
    if what in ("growth_line", "growth_python"):
        # The top growing site's innermost frame in the script. Per tensor
        # (--torch-tensors) it must be the line that appends; with the default
        # allocator the growing segments are cudaMalloc'd by whichever call
        # found the cache full (printed, must be a line of the script).
        g = max(rep.get("growth") or [], key=lambda x: x["bytes_per_iteration"], default=None)
        py = [f for f in (g or {}).get("stack", []) if f["module"] == "python"
              and os.path.basename(f["file"]) == r.script[0]]
        got = f"{r.script[0]}:{py[0]['line']}" if py else None
        want = append_line(r.script[0])
        print(f"growing site's script frame: {got} (the appending line: {want})")
        if what == "growth_python":
            return got is not None or fail("the growing site's stack has no script frame")
        # the headline names the program's line, not PyTorch's allocator
        text = rep["verdict"]["text"]
        print(f"headline: {text[:200]}")
        return (got == want or fail(f"the growing site does not name {want}")) and (
            f"({want})" in text or fail(f"the headline does not name {want}"))
    if what == "append_line":
        want = append_line(r.script[0])
        top = max(rep["phases"], key=lambda p: p["bytes"])
        print(f"largest range at the peak: {top['range']!r} ({top['bytes']} B)")
        return top["range"].startswith(want) or fail(f"the peak's range does not name {want}")
    if what == "projection":
        return check_projection(r)
    if what == "projection_died_exact":
        return True  # a tolerance of check_projection's
    if what == "unprojected_pool":
        # call-site-pattern iterations over a stream-ordered pool, whose
        # reserve the recorder samples at NVTX range ends only: growing, no
        # projection, and the note that says why (report/model.c,
        # pool_unsampled); it projected 190 for 178 here, 4 to 50 times the
        # step in random loops (projection_random.py)
        notes = [n for n in rep["notes"] if n.startswith("no out of memory is projected")]
        print(f"projection {rep['total_growth']['projected_oom_iteration']}, headline "
              f"{rep['verdict']['kind']} ({rep['verdict']['projected_oom_iteration']}), "
              f"note: {notes[0][:90] if notes else None}")
        return (rep["total_growth"]["projected_oom_iteration"] is None
                and rep["verdict"]["kind"] == "growing"
                and rep["verdict"]["projected_oom_iteration"] == -1 and bool(notes)
                or fail("a projection over an unsampled pool, or no note why not"))
    if what == "operator_rows":
        # the script allocates only with torch.empty: at the peak, one row
        # "aten::empty" (emit_nvtx's operator) holds every byte, not a row per call
        rows = [(p["range"], p["bytes"]) for p in rep["phases"]]
        print(f"by NVTX range at the peak: {rows[:4]}{' ...' if len(rows) > 4 else ''}")
        return (len(rows) == 1 and rows[0] == ("aten::empty", dev["peak_allocated_bytes"])
                or fail("the peak's ranges are not one row per operator"))
    if what == "kept_per_step":
        # the bytes the script's history holds at each step's end: vramtrace's
        # growth per iteration is their slope, and no operator is an iteration
        ys, stride, slope, r2 = step_fit(tq["step_kept"])
        tg, it = rep["total_growth"], rep["iteration"]
        print(f"kept by the script: {slope:.1f} B/step, R^2 {r2:.6f}; vramtrace "
              f"{tg['bytes_per_iteration']:.1f} B/iteration over {tg['iterations']} "
              f"(iteration: {it['range'] or it['kind']!r}), R^2 {tg['r2']:.6f}, headline "
              f"{rep['verdict']['kind']}")
        ok = ", op_id = " not in it["range"] or fail("an operator's range taken as an iteration")
        ok = (abs(tg["bytes_per_iteration"] - slope) <= 1 and abs(tg["r2"] - r2) <= 1e-6
              or fail("the growth differs from the bytes the history holds")) and ok
        return (rep["verdict"]["kind"] == "growing" or fail("the headline is not GROWING")) and ok
    if what == "batch_runs":
        return check_batch_runs(r)
    if what == "released":
        n = rep["totals"]["frees"]
        print(f"segments released: {n}")
        return n > 0 or fail("empty_cache released no segment")
    raise ValueError(what)


def check_elsewhere(r):
    """The report on a machine without the program's files: report
    --trace-symbols names native frames only from what the trace carries
    (vramtrace run appended it, vramtrace symbolize), never from files
    here. It must be this machine's report, JSON member for member but the
    notes and the file name, so that every check of this scenario holds
    there too; without the names PyTorch's cache is told as a leak there."""
    if r.o.recorded:
        print("a recorded trace (--recorded): its report here is already the one elsewhere")
        return True
    other = r.base + ".elsewhere.json"
    q = subprocess.run([r.o.vramtrace, "report", r.trace, "--trace-symbols", "--json", other,
                        "-q"], capture_output=True, text=True, timeout=600)
    if q.returncode != 0:
        return fail(f"vramtrace report --trace-symbols failed: {q.stderr.strip()}")
    with open(other) as f:
        there = json.load(f)
    diff = [k for k in r.rep if k not in ("notes", "file") and r.rep[k] != there.get(k)]
    print(f"report with the trace's own names only: "
          f"{'the same' if not diff else 'differs in ' + ', '.join(diff)}; held at exit as "
          f"PyTorch's cache there {there['totals']['cached_at_exit_bytes']} B, here "
          f"{r.rep['totals']['cached_at_exit_bytes']} B")
    return not diff or fail("a report without the program's files differs from this one")


def check_oom_pool(oom, tq):
    """backend:cudaMallocAsync's OOM: the verdict is fragmentation, and the
    pool's reserved and used bytes that vramtrace recorded at the failure are
    PyTorch's memory_stats() there (this backend's reserved_bytes and
    allocated_bytes are the default pool's ReservedMemCurrent and
    UsedMemCurrent: CUDAMallocAsyncAllocator.cpp, getDeviceStats); the
    request and CUDA's free memory are those of PyTorch's message."""
    at, msg = tq.get("at_oom"), tq.get("oom_message", "")
    if not oom or not at:
        return fail(f"expected an OOM in both (vramtrace: {bool(oom)}, PyTorch: {bool(at)})")
    pool = oom.get("pool") or {}
    req = re.search(r"Requested *: (.+)", msg)
    free = re.search(r"Free \(according to CUDA\): (.+)", msg)
    print(f"OOM verdict: {oom['verdict']} ({oom['explanation'][:200]})")
    print(f"pool at the failure: vramtrace reserved {pool.get('reserved_bytes')}, used "
          f"{pool.get('used_bytes')}; PyTorch reserved_bytes {at.get('reserved_bytes.all.current')}"
          f", allocated_bytes {at.get('allocated_bytes.all.current')}")
    print(f"OOM: vramtrace request {format_size(oom['requested_bytes'])}, free "
          f"{format_size(oom['device_free_bytes'])}; PyTorch: Requested "
          f"{req.group(1).strip() if req else '?'}, Free {free.group(1).strip() if free else '?'}")
    ok = oom["verdict"] == "fragmentation" or fail(f"verdict {oom['verdict']}, expected "
                                                   "fragmentation")
    if (pool.get("reserved_bytes"), pool.get("used_bytes")) != (
            at.get("reserved_bytes.all.current"), at.get("allocated_bytes.all.current")):
        ok = fail("the pool's reserved/used bytes at the failure differ from PyTorch's")
    if not req or not free or (format_size(oom["requested_bytes"]), format_size(
            oom["device_free_bytes"])) != (req.group(1).strip(), free.group(1).strip()):
        ok = fail("OOM numbers differ from PyTorch's message")
    return ok


def sampled(y, keep=64):
    """The step ends a growth fit uses, and their stride: every one until 64
    are kept, then every second of those and of the steps after, and so on
    (report/peak.c, sampler_record)."""
    out, stride = [], 1
    for t, v in enumerate(y, 1):
        if t % stride == 0:
            out.append(v)
            if len(out) == keep:
                out, stride = out[1::2], stride * 2
    return out, stride


def fit(y, stride=1):
    """Least-squares slope (bytes per step) and R^2 of samples y taken every
    stride steps, as docs/report.md's Growth defines them (report/growth.c,
    vr_fit)."""
    n = len(y)
    xs = [(i + 1) * stride for i in range(n)]
    mx, my = sum(xs) / n, sum(y) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (v - my) for x, v in zip(xs, y))
    syy = sum((v - my) ** 2 for v in y)
    return sxy / sxx, (min(1.0, sxy * sxy / (sxx * syy)) if syy > 0 else 0.0)


def step_fit(steps):
    """PyTorch's bytes at each step's end as the report samples and fits
    them: (samples, stride, slope, R^2)."""
    ys, stride = sampled(steps)
    return (ys, stride) + fit(ys, stride)


def sustained(y, stride, slope):
    """docs/report.md's rise that kept on: at least 6 samples (stride steps
    apart, fitted at slope bytes a step), every one of the last third above
    the first third's highest, a new highest in the middle third, and in the
    last third a new highest at least a quarter of what the slope adds over
    a third above the earlier highest (vr_sustained)."""
    n, k = len(y), len(y) // 3
    if n < 6 or slope < 1:
        return False
    before_last = max(y[:n - k])
    mid_high = any(y[i] > max(y[:i]) for i in range(k, n - k))
    rise = max(y) - before_last
    return (min(y[-k:]) > max(y[:k]) and mid_high and rise > 0
            and rise >= slope * stride * k / 4)


def check_growth_truth(r, tq):
    """sc_random_steps.py's loop: vramtrace's growth (the fit of live bytes
    at each "step" range's end) against the same fit of PyTorch's own bytes
    at those ends: memory_allocated() per tensor (--torch-tensors), else
    memory_reserved() (vramtrace sees the segments); the iteration found
    ("step", every step), the slope within a byte, R^2, the rise that
    kept on, and the headline: GROWING exactly when PyTorch's bytes say so
    (slope >= 1 B, and R^2 >= 0.8 or the rise kept on)."""
    rep = r.rep
    uncached = "PYTORCH_NO_CUDA_MEMORY_CACHING" in r.env_extra
    steps = tq["step_tensors" if uncached else "step_allocated" if "--torch-tensors" in r.vt_opts
               else "step_reserved"]
    ys, stride, slope, r2 = step_fit(steps)
    tg, it, kind = rep["total_growth"], rep["iteration"], rep["verdict"]["kind"]
    print(f"PyTorch over {len(steps)} steps (every {stride}): {slope:.1f} B/step, R^2 "
          f"{r2:.4f}; vramtrace: "
          f"{tg['bytes_per_iteration']:.1f} B/{it['range']} over {tg['iterations']}, R^2 "
          f"{tg['r2']:.4f}; headline {kind}")
    name = ("iteration" if "numbered" in r.script else "epoch <N> step" if "epochs" in r.script
            else "step")
    ok = (it["range"], it["count"], tg["iterations"]) == (name, len(steps), len(steps)) or fail(
        f"iteration {it}, {tg['iterations']} sampled: expected every step")
    ok = (abs(tg["bytes_per_iteration"] - slope) <= 1 and abs(tg["r2"] - r2) <= 1e-6
          or fail("the growth fit differs from PyTorch's bytes at the steps' ends")) and ok
    rose = sustained(ys, stride, slope)
    ok = (tg["sustained"] == rose or fail(f"sustained {tg['sustained']}, PyTorch's bytes {rose}")
          ) and ok
    should = slope >= 1 and (r2 >= 0.8 or rose)
    return ((kind == "growing") == should or fail(
        f"headline {kind}, but the fit of PyTorch's bytes says {'growing' if should else 'not'}")
            ) and ok


def check_leak_truth(r, tq):
    """sc_random_steps.py run until PyTorch raises (per tensor): the fatal
    failure's verdict is *leak* when PyTorch's memory_allocated() at the
    completed steps' ends grows as docs/report.md's leak rule asks (slope
    > 0 and R^2 > 0.9, or a rise that kept on); the kept tensors are the
    script's one growing line, so its growth is theirs."""
    oom, steps = fatal_oom(r.rep), tq["step_allocated"]
    ys, stride, slope, r2 = step_fit(steps)
    grows = slope > 0 and (r2 > 0.9 or sustained(ys, stride, slope))
    print(f"PyTorch over {len(steps)} completed steps: {slope:.1f} B/step, R^2 {r2:.4f}, "
          f"kept on {sustained(ys, stride, slope)}; vramtrace's fatal failure: "
          f"{oom['verdict'] if oom else None} ({(oom or {}).get('explanation', '')[:120]})")
    if not oom or "oom_message" not in tq:
        return fail("expected PyTorch's OutOfMemoryError and vramtrace's fatal failure")
    return ((oom["verdict"] == "leak") == grows or fail(
        f"verdict {oom['verdict']}, but PyTorch's bytes {'grow' if grows else 'do not grow'}"))


def torch_verdict(x):
    """docs/report.md's rule applied to PyTorch's state at a raised OOM x:
    fragmentation when the free memory was there in pieces (the cache's
    unallocated reserve plus the device's free bytes cover the request, and
    what tensors hold + the request + the device's use outside PyTorch fit
    the device), else capacity."""
    req = (x["observer"] or {}).get("alloc", x["request"])
    unalloc = x["reserved"] - x["allocated"]
    outside = x["total"] - x["free"] - x["reserved"]
    pieces = (unalloc > 0 and req <= unalloc + x["free"]
              and x["allocated"] + req + outside <= x["total"])
    return "fragmentation" if pieces else "capacity"


def check_oom_truth(r, tq):
    """Every OutOfMemoryError sc_random_oom.py caught, against vramtrace's
    failed allocations in that operation's NVTX range ("op N"): PyTorch's
    caching allocator tries the device up to three times before it raises
    (alloc_block, then after freeing cached blocks: CUDACachingAllocator.cpp),
    so each raised OOM is one to three failures there, the last at the
    state PyTorch raised in: its request and the device's free and total
    bytes are the OOM observer's, the live (reserved) bytes memory_stats()'s,
    the bytes outside the recording the device's use beyond PyTorch's
    reserve. The verdict: with --torch-tensors (each tensor its own
    allocation) docs/report.md's rule on PyTorch's numbers (torch_verdict);
    with the default allocator vramtrace sees segments only, so capacity
    with the --torch-tensors caveat (README, Known limits), however PyTorch
    would call it (counted, printed). A failure in a range where PyTorch
    raised nothing was retried by PyTorch itself at the same size: the last
    one there is recovered; where PyTorch raised, every failure but the last
    is not (the last may be: the program's next request of that size
    succeeded). The program catches every error and exits 0: no failure is
    fatal. With expandable_segments:True each failure is one page's
    cuMemCreate, taken before PyTorch gives the request's earlier pages back,
    so the device's total bytes, the recovered rule, fatal and the pages made
    for the mapping before the failed one (whole pages, no more than the
    request needs) are held there (the request and the state at the raise
    are PyTorch's, not one CUDA call's)."""
    rep, tensors = r.rep, "--torch-tensors" in r.vt_opts
    expandable = "expandable_segments:True" in r.env_extra.get("PYTORCH_CUDA_ALLOC_CONF", "")
    # PYTORCH_NO_CUDA_MEMORY_CACHING=1: every tensor its own cudaMalloc, and
    # PyTorch keeps no statistics: the truth is the tensors the script holds
    uncached = "PYTORCH_NO_CUDA_MEMORY_CACHING" in r.env_extra
    leaks = said_leak = 0
    by = {}
    for o in rep["ooms"]:
        by.setdefault(o["range"], []).append(o)
    raised = {"op " + x["op"]: x for x in tq.get("ooms", [])}
    ok, frag, last_recovered = True, 0, 0
    if not raised:
        return fail("the script caught no OutOfMemoryError: not this check's case")
    for rng, x in raised.items():
        # backend:cudaMallocAsync has no OOM observer: the request as made
        # (that backend rounds nothing) and mem_get_info() in the except
        fs = by.get(rng, [])
        obs = x["observer"] or {"alloc": x["request"], "free": x["free"], "total": x["total"]}
        if uncached:
            x = dict(x, allocated=x["held"], reserved=x["held"])
        if not 1 <= len(fs) <= 3:
            ok = fail(f"{rng}: PyTorch raised; vramtrace has {len(fs)} failures there")
            continue
        o = fs[-1]
        if any(f["recovered"] for f in fs[:-1]):
            ok = fail(f"{rng}: PyTorch raised, yet vramtrace calls failures before its last "
                      f"recovered: {[f['recovered'] for f in fs]}")
        last_recovered += o["recovered"]
        want = {"requested_bytes": obs.get("alloc"), "device_free_bytes": obs.get("free"),
                "device_total_bytes": obs.get("total"), "live_reserved_bytes": x["reserved"],
                "outside_recording_bytes": x["total"] - x["free"] - x["reserved"],
                "fatal": False, "device": x.get("device", 0)}
        if expandable:
            want = {k: want[k] for k in ("device_total_bytes", "fatal", "device")}
            # each failure is one page; the pages made for the mapping before
            # it are whole pages, and no more than PyTorch's request covers
            # (rounded up to pages, one more for a start inside a page)
            page = o["requested_bytes"]
            for f in fs:
                most = -(-x["request"] // page) * page + page
                if f["mapping_bytes"] % page or f["mapping_bytes"] + page > most:
                    ok = fail(f"{rng}: a mapping of {f['mapping_bytes']} B before a {page} B "
                              f"page, for PyTorch's request of {x['request']} B")
        elif tensors or uncached:
            want["live_allocated_bytes"] = x["allocated"]
            want["verdict"] = torch_verdict(x)
        else:
            want["live_allocated_bytes"] = x["reserved"]
            want["verdict"] = "capacity"
            frag += torch_verdict(x) == "fragmentation"
        grew = ops_grew(rep, tq, x, 3 if uncached else 1 if tensors else 2)
        leaks += grew
        if o["verdict"] == "leak" and grew and "verdict" in want:
            want["verdict"] = "leak"
            said_leak += 1
        bad = {k: (o.get(k), v) for k, v in want.items() if o.get(k) != v}
        if bad:
            ok = fail(f"{rng}: (vramtrace, PyTorch) differ: {bad}")
    for rng, fs in by.items():
        if rng not in raised and (not fs[-1]["recovered"] or any(f["fatal"] for f in fs)):
            ok = fail(f"{rng}: PyTorch retried and went on, vramtrace: recovered "
                      f"{fs[-1]['recovered']}, fatal {[f['fatal'] for f in fs]}")
    if rep["verdict"]["kind"] != "oom_handled":
        ok = fail(f"headline {rep['verdict']['kind']}: the program caught every error")
    print(f"{len(raised)} OutOfMemoryErrors caught ({frag} PyTorch's state calls fragmentation"
          f"{'' if tensors or uncached else ', told as capacity with segments only'}); vramtrace "
          f"{len(rep['ooms'])} failed allocations in {len(by)} ranges ("
          f"{rep['totals']['recovered_failed_allocations']} recovered, {last_recovered} of them "
          f"the last of a raised error's, by the program's next request); headline "
          f"{rep['verdict']['kind']}; {leaks} after PyTorch's bytes grew over the ops "
          f"(iterations), {said_leak} of them told as leak")
    return ok


def range_stem(name):
    """trace/vtrace.h's rule for range names numbered by step, restated:
    the name without its trailing digits, then without trailing separators,
    each other run of digits written "<N>"; None when it does not end in a
    digit or nothing is left."""
    k = len(name.rstrip("0123456789"))
    if k == len(name):
        return None
    return re.sub(r"[0-9]+", "<N>", name[:k].rstrip(" _-.:#=/")) or None


def ops_grew(rep, tq, x, col):
    """Whether PyTorch's bytes (column col of sc_random_oom.py's op_ends:
    1 allocated, per tensor; 2 reserved; 3 the tensors the script holds,
    uncached) at the ends of the ops before the raised error x, of the op
    ranges vramtrace took as iterations, grew by docs/report.md's leak rule
    for a failure
    (oom.c, leaking_site): slope > 0 and R^2 > 0.9, or a rise that kept on,
    over the samples the report keeps (sampled). A leak verdict is right
    only then: sc_random_oom.py keeps tensors across ops in a list."""
    it = rep["iteration"]
    ends = tq.get("op_ends", [])[:x.get("ends_before", 0)]
    y = [e[col] for e in ends
         if it["kind"] == "nvtx_range" and range_stem(f"op {e[0]}0") == it["range"]]
    ys, stride = sampled(y)
    if len(ys) < 3:
        return False
    slope, r2 = fit(ys, stride)
    return slope > 0 and (r2 > 0.9 or sustained(ys, stride, slope))


def check_projection(r):
    """sc_retained.py, sc_two_devices.py: the step at which vramtrace's
    growth projects out of memory, against the step at which the same
    script, run on until it fails (400 steps, without vramtrace), raises
    PyTorch's OutOfMemoryError (the first step it does not print): within
    10 %, as the trainer's scenario retain_history holds it. The same
    longer run recorded too: the projection of a trace that ran out, within
    10 % of the step it ran out in (its last step, which raised with its
    activations live, measured no step's need: 233 for 178), and within one
    step with "projection_died_exact" (NVTX steps, so that the recorder
    samples a stream-ordered pool at their ends: 190 for 178 without)."""
    proj = r.rep["total_growth"]["projected_oom_iteration"]
    args = r.script[1:]  # the step count, the last number, becomes 400
    last = max(i for i, a in enumerate(args) if a.isdigit())
    args = args[:last] + ["400"] + args[last + 1:]
    p = r.run_plain(args)
    done = [int(m.group(1)) for m in re.finditer(r"^step (\d+) kept", p.stdout, re.M)]
    if p.returncode != 1 or "OutOfMemoryError" not in p.stdout or not done:
        return fail(f"the longer run did not run out of memory (exit {p.returncode})")
    real = done[-1] + 2  # steps print 0-based after they complete
    print(f"out of memory projected at step {proj}; the longer run raised in step {real}")
    ok = (proj is not None and abs(proj - real) <= real / 10) or fail(
        "the projection is more than 10 % from the step that ran out")
    trace = r.base + ".longer.vtrace"
    q = r.record(trace, args)
    if q.returncode != p.returncode or q.stdout != p.stdout:
        return fail("the longer run recorded did not end as without vramtrace")
    died = seeds.report_json(r.o.vramtrace, "--json", r.base + ".longer.report.json", trace)
    proj = died["total_growth"]["projected_oom_iteration"]
    print(f"its trace projects out of memory at step {proj}")
    exact = "projection_died_exact" in r.checks
    return (proj is not None and abs(proj - real) <= (1 if exact else real / 10) and ok) or fail(
        f"the projection of the run that ran out is more than {'one step' if exact else '10 %'}"
        " from its step")


def largest_fitting_batch(r, lo, hi):
    """Bisection with the script alone (no vramtrace): the largest --batch
    that completes, lo known to fit and hi known to fail."""
    def fits(b):
        p = r.run_plain(["--batch", str(b)] + r.script[3:])
        return p.returncode == 0

    if not fits(lo):
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def report_runs(r, traces, tag):
    """`vramtrace report A B --json`: the batch advice across the traces."""
    js = f"{r.base}.{tag}.json"
    q = subprocess.run([r.o.vramtrace, "report", *traces, "--json", js, "-q"],
                       capture_output=True, text=True, timeout=600)
    if q.returncode != 0:
        raise RuntimeError(f"vramtrace report {' '.join(traces)}: {q.stderr.strip()}")
    with open(js) as f:
        return json.load(f).get("batch_advice") or {}


def check_batch_runs(r, max_runs=10):
    """A user's runs at --batch B (the scenario's) and 2B, then the batch
    vramtrace's advice across the runs names next (`vramtrace report` of the
    two runs that bracket the answer: the largest that completed and the
    smallest that failed, else the two largest that completed), until its
    advice is 'measured'. That batch must complete and be within 2 % of the
    largest batch that fits, found by bisection with the script alone. With
    --wrong the bisected truth is taken 5 % larger (must be caught)."""
    first = int(r.script[2])
    runs = {first: (r.trace, 0)}
    nxt, advice = 2 * first, {}
    for i in range(max_runs):
        if nxt in runs:
            break
        trace = f"{r.base}.batch{nxt}.vtrace"
        runs[nxt] = (trace, r.record(trace, ["--batch", str(nxt)] + r.script[3:]).returncode)
        ok = sorted(b for b, (_, rc) in runs.items() if rc == 0)
        bad = sorted(b for b, (_, rc) in runs.items() if rc != 0 and (not ok or b > ok[-1]))
        pair = [ok[-1], bad[0]] if ok and bad else (ok[-2:] if ok else bad[:2])
        if len(pair) < 2:
            break
        advice = report_runs(r, [runs[b][0] for b in pair], f"advice{i}")
        print(f"report of the runs at {pair[0]} and {pair[1]}: {advice.get('kind')} "
              f"{advice.get('batch')} (device {advice.get('device')})")
        if advice.get("kind") == "measured" or (advice.get("next_batch") or -1) <= 0:
            break
        nxt = advice["next_batch"]
    adv = advice.get("batch") or -1
    failed = sorted(b for b, (_, rc) in runs.items() if rc != 0)
    truth = largest_fitting_batch(r, max(first, adv if runs.get(adv, ("", 1))[1] == 0 else 0),
                                  failed[0] if failed else 1 << 16)
    if r.o.wrong:
        truth = truth * 21 // 20
    print(f"advised {advice.get('kind')} batch {adv} after {len(runs)} runs; the largest batch "
          f"that fits (bisection without vramtrace): {truth}")
    ok = advice.get("kind") == "measured" or fail("the advice never became 'measured'")
    ok = (adv in runs and runs[adv][1] == 0) or fail(f"the advised batch {adv} did not complete")
    return ok and (truth * 0.98 <= adv <= truth or fail("the advice is more than 2 % from it"))


def append_line(script):
    """'script:N', N the line of `script` that starts with history.append(
    (found in the source, never typed here)."""
    src = open(os.path.join(HERE, script)).read().splitlines()
    line = next(i + 1 for i, t in enumerate(src) if t.strip().startswith("history.append("))
    return f"{script}:{line}"


def result(r, traced, ok, checks):
    """The scenario's numbers for scripts/gen_scenarios_md.py --torch-results:
    vramtrace's (report JSON) beside PyTorch's own (memory_stats, message)."""
    rep, tq = r.rep, r.torch
    oom = fatal_oom(rep)
    g = max(rep.get("growth") or [], key=lambda x: x["bytes_per_iteration"], default=None)
    py = [f for f in (g or {}).get("stack", []) if f["module"] == "python"
          and os.path.basename(f["file"]) == r.script[0]]
    unalloc = re.search(r"and (.+?) is reserved by PyTorch but unallocated",
                        tq.get("oom_message", ""))
    seed, claim, beside = CLAIMS[r.name]
    return {
        "name": r.name, "seed": {"file": seed, "claim": claim}, "beside": beside,
        "script": " ".join(r.script), "environment": " ".join(
            [f"{k}={v}" for k, v in r.env_extra.items()] + r.vt_opts),
        "exit": traced.returncode, "passed": ok, "checks": checks, "torch": tq.get("torch"),
        "peak_allocated_bytes": rep["devices"][0]["peak_allocated_bytes"],
        "peak_reserved_bytes": rep["devices"][0]["peak_reserved_bytes"],
        "cudamalloc_calls": rep["totals"]["allocations"], "frees": rep["totals"]["frees"],
        "verdict": oom["verdict"] if oom else None,
        "requested_bytes": oom["requested_bytes"] if oom else None,
        "growth_bytes_per_iteration": g["bytes_per_iteration"] if g else None,
        "growth_line": f"{r.script[0]}:{py[0]['line']}" if py else None,
        "torch_allocated_peak": tq.get("allocated_bytes.all.peak"),
        "torch_reserved_peak": tq.get("reserved_bytes.all.peak"),
        "torch_unallocated": unalloc.group(1) if unalloc else None,
        "torch_oom": tq.get("oom_message", "").split(".")[0] or None,
        "pool": oom.get("pool") if oom else None,
        "torch_at_oom": tq.get("at_oom"),
    }


def perturb(tq):
    """A wrong ground truth: every PyTorch number one 512-byte block off and
    the OOM message's free memory doubled."""
    for k, v in (list(tq.items()) if isinstance(tq, dict) else list(enumerate(tq))):
        if isinstance(v, int) and not isinstance(v, bool):
            tq[k] = v + 512
        elif isinstance(v, (dict, list)):
            perturb(v)
    if isinstance(tq, dict) and "oom_message" in tq:
        tq["oom_message"] = tq["oom_message"].replace("of which ", "of which 1")
    for series in ("step_pinned", "step_kept"):
        if isinstance(tq, dict) and tq.get(series):
            # a shift of every step's bytes leaves their fit as it was: the last one
            tq[series][-1] += 1 << 20


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--sim-lib", help="the simulated device's folder (not with --real)")
    ap.add_argument("--real", action="store_true",
                    help="run on the machine's real GPU: no simulated runtime, no --sim")
    ap.add_argument("--recorded", metavar="RUNDIR",
                    help="run nothing: check RUNDIR/NAME.vtrace against RUNDIR/NAME.torch.json")
    ap.add_argument("--python", help="the interpreter with PyTorch (not with --recorded)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--wrong", action="store_true")
    ap.add_argument("--results", help="write NAME.json here for gen_scenarios_md.py")
    ap.add_argument("name", choices=sorted(SCENARIOS))
    o = ap.parse_args()
    if not o.recorded and not o.python:
        ap.error("--python is required unless --recorded")
    if not o.real and not o.recorded and not o.sim_lib:
        ap.error("--sim-lib is required unless --real or --recorded")
    return o


def have_torch(o):
    """PyTorch's version for o.python, or None."""
    try:
        have = subprocess.run([o.python, "-c", "import torch; print(torch.__version__)"],
                              capture_output=True, text=True, timeout=300)
    except OSError:
        return None
    return have.stdout.strip() if have.returncode == 0 else None


def run_both(o, r):
    """Both runs (or, --recorded, the kept ones): (ok so far, traced run or None)."""
    if o.recorded:
        r.load(os.path.join(o.recorded, r.name + ".vtrace"),
               os.path.join(o.recorded, r.name + ".torch.json"))
        print(f"recorded run: {o.recorded}/{r.name}.vtrace (not rerun)")
        kept = os.path.join(o.recorded, r.name + ".stderr")
        if os.path.exists(kept):
            with open(kept, encoding="utf-8", errors="replace") as f:
                r.traced_stderr = f.read()
        return True, None
    plain = r.run_plain()
    traced = r.run_traced()
    r.traced_stderr = traced.stderr
    with open(r.base + ".stderr", "w", encoding="utf-8") as f:
        f.write(traced.stderr)
    if traced.stderr.strip():
        print("stderr (traced):", traced.stderr.strip()[-1500:])
    return check_same(plain, traced), traced


def main():
    o = parse_args()
    if not o.recorded:
        version = have_torch(o)
        if not version:
            print(f"SKIP: PyTorch is not installed for {o.python} (README: install command; "
                  "ctest -LE pytorch leaves these tests out)")
            return SKIP
        print(f"PyTorch {version} at {o.python}")
    r = Run(o, o.name)
    try:
        ok, traced = run_both(o, r)
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        print("harness:", e)
        return 3
    if o.wrong:
        perturb(r.torch)
    checks = []
    for what in r.checks:
        one = check(r, what, r.torch)
        checks.append({"what": what, "ok": one})
        ok = one and ok
    if o.results and traced and not o.wrong and r.name in CLAIMS:
        os.makedirs(o.results, exist_ok=True)
        with open(os.path.join(o.results, r.name + ".json"), "w") as f:
            json.dump(result(r, traced, ok, checks), f, indent=1)
    if o.wrong:
        print("wrong ground truth", "CAUGHT" if not ok else "NOT caught")
        return 0 if not ok else 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
