#!/usr/bin/env python3
"""bench/perf.py: vramtrace's steady-state benchmark (issue 18), in one run.

    bench/perf.py [--quick] [--build DIR] [--reps N] [--only PARTS] > OUTPUT    measure
    bench/perf.py --check OUTPUT                                 every figure printed, a number
    bench/perf.py --readme README.md OUTPUT                      regenerate the README's table

Measures, and prints on stdout one `figure KEY VALUE UNIT` line each (FIGURES
below is the one list of them; `info KEY=VALUE` lines say where and when):

- recording: added wall ns per cudaMalloc/cudaFree event under
  libvramtrace.so at call depths 5, 20 and 60, with stacks off
  (VRAMTRACE_STACK_DEPTH=0) and with 8 threads (depth 20, each thread its own
  pairs), beside heaptrack (malloc/free of the same shape: same depth, same
  threads) and the unwinding floor (bench/floor_preload.c: a bare hook that
  only calls libunwind's cached unw_backtrace; with stacks off, no unwinding).
  Each figure is the difference between two run sizes (whole processes,
  timed from outside, so start-up and exit costs cancel) minus the same
  difference of the plain program, per event; median of REPS repetitions, in
  each of which plain, vramtrace, heaptrack and floor run in turn. The
  `_cpu` figures are the same from user+system CPU time (all threads and
  waited-for children: heaptrack_interpret, vramtrace's writer thread).
  `vs_heaptrack`: vramtrace's added wall ns over heaptrack's, per
  repetition (both run in it, minutes apart at most), then the median.
- preload memory per live allocation: peak RSS difference between 2^18 and
  2^20 live cudaMalloc allocations (never freed), minus the same difference
  without the preload (the simulated device's own memory cancels). Powers of
  two so that a doubling table is at the same load factor at both sizes.
- the report: `vramtrace report -q --json /dev/null` on a synthetic
  alloc/free storm (bench_report's trace: 200 sites, 10 k live) of 2 M and
  10 M events, and on the traces of 2^18 and 2^20 allocations never freed
  recorded above: events per second (difference of sizes over difference of
  times) and bytes of peak RSS per live allocation. Beside them, in the same
  repetitions, heaptrack_print (`-f FILE`, its default analysis) on
  heaptrack's traces of the same shapes (bench/preload_overhead.c: `storm`,
  malloc/free in the storm's shape, tests/report/storm_shape.h; `mlive`,
  mallocs never freed) at the same sizes, and the ratio of the two speeds
  per repetition (in session 39's three runs the storm's ratio was 1.94,
  1.94 and 1.75 while its M events/s were 11.4, 14.7 and 9.73: the machine
  moves both, the ratio less). heaptrack_print's input
  holds no addresses (heaptrack_interpret matched frees to allocations while
  recording), so its figure is the comparison users make, not the same work.
- the report's memory per distinct call stack: peak RSS of `vramtrace
  report -q --json /dev/null` on traces of tests/report/many_stacks_prog.c
  at 2^12 and 2^14 stacks (each allocation its own stack of some 30
  frames; below VR_MAX_MERGED_SITES, report/report.h, past which a table
  symbolizes only its largest sites), the difference over the difference of
  the counts.
- GAN training (`train --synthetic --memory-only --log-every 1000 --steps 50`
  on the simulated device): total instructions (callgrind Ir, all threads)
  with LD_PRELOAD=libvramtrace.so against without, as a percentage; and the
  same with stacks off (VRAMTRACE_STACK_DEPTH=0): what recording the events
  costs before any call stack. Of the instructions added, those in libzstd
  (the trace's compression) and in ld.so (loading the preload and its
  libraries) are printed apart, and their share of the plain run: the part
  that no change to the recording code removes.

Progress goes to stderr. Exit 0, or 1 when a program failed (its command is
named), 2 on bad usage. Numbers only: nothing here asserts on speed.
"""
import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The one list of figures: key, unit, target (op, value) or None, table row,
# table column. --check, --readme and the measurement all read it.
ROWS = [  # row, label ({...} from the output's info lines)
    ("d5", "added ns per cudaMalloc/cudaFree event, call depth 5"),
    ("d20", "added ns per cudaMalloc/cudaFree event, call depth 20"),
    ("d60", "added ns per cudaMalloc/cudaFree event, call depth 60"),
    ("off", "added ns per event, stacks off (`VRAMTRACE_STACK_DEPTH=0`; floor: bare hook, no unwinding)"),
    ("t8", "added ns per event, {threads} threads at depth 20 (each its own pairs)"),
    ("mem", "preload memory per live allocation, {live_lo} → {live_hi} live (without a tool: the simulated device's own)"),
    ("storm", "`vramtrace report`, alloc/free storm of {storm_lo} → {storm_hi} events (heaptrack: `heaptrack_print` on malloc/free of the same shape)"),
    ("live", "`vramtrace report`, {live_lo} → {live_hi} allocations never freed (heaptrack: `heaptrack_print`, mallocs never freed)"),
    ("stacks", "`vramtrace report` memory per distinct call stack, {stacks_lo} → {stacks_hi} stacks (`tests/report/many_stacks_prog.c`: every allocation its own stack)"),
    ("gan", "GAN training (`train --synthetic --memory-only`, {gan_steps} steps): instructions added (callgrind Ir; floor: vramtrace with stacks off, `VRAMTRACE_STACK_DEPTH=0`)"),
    ("gan_step", "the same per training step: the difference of {gan_steps_lo} and {gan_steps} steps (start-up cancels; vramtrace: Ir added per step, its start-up cost, and the added share of a step's own instructions)"),
]
TARGETS = {"d20": ("<=", 120), "d60": ("<=", 200), "off": ("<=", 40)}


def _record_figures():
    out = []
    for cfg in ("d5", "d20", "d60", "off", "t8"):
        t = TARGETS.get(cfg)
        out.append((f"record.{cfg}.plain", "ns/event", None, cfg, "plain"))
        out.append((f"record.{cfg}.vramtrace", "ns/event", t, cfg, "vramtrace"))
        out.append((f"record.{cfg}.vramtrace_cpu", "ns/event", None, cfg, None))
        if cfg != "off":
            out.append((f"record.{cfg}.heaptrack", "ns/event", None, cfg, "heaptrack"))
            out.append((f"record.{cfg}.heaptrack_cpu", "ns/event", None, cfg, None))
            out.append((f"record.{cfg}.vs_heaptrack", "x_heaptrack_ns", None, cfg, "vramtrace"))
        out.append((f"record.{cfg}.floor", "ns/event", None, cfg, "floor"))
        out.append((f"record.{cfg}.floor_cpu", "ns/event", None, cfg, None))
    out.append(("record.d20.trace_bytes", "B/event", None, "d20", None))
    return out


FIGURES = _record_figures() + [
    ("memory.preload", "B/live", ("<=", 32), "mem", "vramtrace"),
    ("memory.sim", "B/live", None, "mem", "plain"),
    ("report.storm.events_per_s", "M/s", (">=", 20), "storm", "vramtrace"),
    ("report.storm.events_per_s_cpu", "M/s", None, "storm", None),
    ("report.storm.max_rss", "MiB", None, "storm", "vramtrace"),
    ("report.live.events_per_s", "M/s", (">=", 10), "live", "vramtrace"),
    ("report.live.events_per_s_cpu", "M/s", None, "live", None),
    ("report.live.bytes_per_live", "B/live", ("<=", 64), "live", "vramtrace"),
    ("report.storm.heaptrack", "M/s", None, "storm", "heaptrack"),
    ("report.storm.heaptrack_cpu", "M/s", None, "storm", None),
    ("report.storm.vs_heaptrack", "ratio", None, "storm", "vramtrace"),
    ("report.live.heaptrack", "M/s", None, "live", "heaptrack"),
    ("report.live.heaptrack_cpu", "M/s", None, "live", None),
    ("report.live.vs_heaptrack", "ratio", None, "live", "vramtrace"),
    ("report.stacks.bytes_per_stack", "B/stack", None, "stacks", "vramtrace"),
    ("gan.ir_plain", "Ir", None, "gan", "plain"),
    ("gan.ir_vramtrace", "Ir", None, "gan", None),
    ("gan.overhead", "%", ("<=", 1), "gan", "vramtrace"),
    ("gan.overhead_stacks_off", "%", None, "gan", "floor"),
    ("gan.ir_zstd", "Ir", None, "gan", None),
    ("gan.ir_loader", "Ir", None, "gan", None),
    ("gan.overhead_fixed", "%", None, "gan", None),
    ("gan.step_ir_added", "Ir/step", None, "gan_step", "vramtrace"),
    ("gan.startup_ir_added", "Ir", None, "gan_step", "vramtrace"),
    ("gan.step_overhead", "%", None, "gan_step", "vramtrace"),
    ("gan.step_ir_plain", "Ir/step", None, "gan_step", "plain"),
]

FULL = dict(pairs=(1000000, 3000000), live=(1 << 18, 1 << 20), storm=(2000000, 10000000),
            stacks=(1 << 12, 1 << 14),
            gan_steps=50, gan_steps_lo=10, reps=5, mem_reps=3)
QUICK = dict(pairs=(20000, 60000), live=(1 << 12, 1 << 14), storm=(100000, 300000),
             stacks=(1 << 10, 1 << 12),
             gan_steps=2, gan_steps_lo=1, reps=1, mem_reps=1)
THREADS = 8
HEAPTRACK = shutil.which("heaptrack")
HEAPTRACK_PRINT = shutil.which("heaptrack_print")
VALGRIND = shutil.which("valgrind")

T0 = time.monotonic()


def progress(msg):
    print(f"[perf {time.monotonic() - T0:6.1f} s] {msg}", file=sys.stderr, flush=True)


class Failed(Exception):
    pass


# ---- running ---------------------------------------------------------------

def base_env(build):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VRAMTRACE_", "BENCH_")) and k not in ("LD_PRELOAD", "NVTX_INJECTION64_PATH")}
    env["LD_LIBRARY_PATH"] = os.path.join(build, "lib", "sim")
    return env


def run(rusage_run, cmd, env, cwd=None):
    """Runs cmd to the end under rusage_run (bench/rusage_run.c); returns (wall s, CPU s of it and
    its waited-for children, max RSS KiB). Raises Failed on a non-zero exit."""
    p = subprocess.run([rusage_run] + cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    m = re.search(r"^rusage wall_s=(\S+) cpu_s=(\S+) maxrss_kib=(\d+)$", p.stderr, re.M)
    if p.returncode != 0 or not m:
        raise Failed(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-400:]}")
    return float(m.group(1)), float(m.group(2)), int(m.group(3))


class Tools:
    """The programs and how each tool wraps them."""

    def __init__(self, build, tmp):
        self.build, self.tmp = build, tmp
        self.prog = os.path.join(build, "bin", "preload_overhead")
        self.preload = os.path.join(build, "lib", "libvramtrace.so")
        self.floor = os.path.join(build, "lib", "libfloor_preload.so")
        self.vt = os.path.join(build, "bin", "vramtrace")
        self.bench_report = os.path.join(build, "bin", "bench_report")
        self.many_stacks = os.path.join(build, "bin", "report_many_stacks_prog")
        self.train = os.path.join(build, "bin", "train")
        self.rusage_run = os.path.join(build, "bin", "rusage_run")
        for p in (self.rusage_run, self.prog, self.preload, self.floor, self.vt, self.bench_report, self.train):
            if not os.path.exists(p):
                raise Failed(f"{p} is missing: build first (cmake --build {build})")
        self.env = base_env(build)

    def run(self, cmd, env, cwd=None):
        return run(self.rusage_run, cmd, env, cwd)

    def vt_env(self, trace, stack_depth=None):
        env = dict(self.env, LD_PRELOAD=self.preload, VRAMTRACE_QUIET="1", VRAMTRACE_OUTPUT=trace)
        if stack_depth is not None:
            env["VRAMTRACE_STACK_DEPTH"] = str(stack_depth)
        if os.path.exists(trace):
            os.unlink(trace)
        return env

    def pairs(self, tool, mode, n, depth, threads, stacks_off=False):
        """One run of the pairs program under tool: (wall, cpu, maxrss, trace bytes)."""
        args = [self.prog, mode, str(n), str(depth), str(threads)]
        trace = os.path.join(self.tmp, "pairs.vtrace")
        if tool == "plain":
            return self.run(args, self.env) + (0,)
        if tool == "vramtrace":
            r = self.run(args, self.vt_env(trace, 0 if stacks_off else None))
            size = os.path.getsize(trace)
            os.unlink(trace)
            return r + (size,)
        if tool == "floor":
            env = dict(self.env, LD_PRELOAD=self.floor)
            if stacks_off:
                env["BENCH_FLOOR_FRAMES"] = "0"
            return self.run(args, env) + (0,)
        out = os.path.join(self.tmp, "ht")  # heaptrack, malloc/free of the same shape
        r = self.run([HEAPTRACK, "-o", out] + args, self.env, cwd=self.tmp)
        for f in os.listdir(self.tmp):
            if f.startswith("ht"):
                os.unlink(os.path.join(self.tmp, f))
        return r + (0,)


# ---- recording -------------------------------------------------------------

RECORD_CONFIGS = [  # name, depth, threads, stacks off
    ("d5", 5, 1, False), ("d20", 20, 1, False), ("d60", 60, 1, False),
    ("off", 20, 1, True), ("t8", 20, THREADS, False)]


def record_rep(tools, sizes, cfg, samples):
    """One repetition of one configuration: every tool at both sizes, in
    turn; appends each tool's per-event figures to samples."""
    name, depth, threads, off = cfg
    tools_here = ["plain", "vramtrace", "floor"] + ([] if off or not HEAPTRACK else ["heaptrack"])
    res = {}
    for n in sizes:
        for tool in tools_here:
            res[(tool, n)] = tools.pairs(tool, "cuda", n, depth, threads, off)
        if "heaptrack" in tools_here:
            res[("malloc", n)] = tools.pairs("plain", "malloc", n, depth, threads)
    lo, hi = sizes
    events = 2 * (hi - lo)

    def delta(tool, i):
        return res[(tool, hi)][i] - res[(tool, lo)][i]

    samples.setdefault(f"record.{name}.plain", []).append(delta("plain", 0) / events * 1e9)
    for tool in tools_here[1:]:
        base = "malloc" if tool == "heaptrack" else "plain"
        samples.setdefault(f"record.{name}.{tool}", []).append(
            (delta(tool, 0) - delta(base, 0)) / events * 1e9)
        samples.setdefault(f"record.{name}.{tool}_cpu", []).append(
            (delta(tool, 1) - delta(base, 1)) / events * 1e9)
    ht = samples[f"record.{name}.heaptrack"][-1] if "heaptrack" in tools_here else 0
    if ht:  # the anchor of the same repetition
        samples.setdefault(f"record.{name}.vs_heaptrack", []).append(
            samples[f"record.{name}.vramtrace"][-1] / ht)
    if name == "d20":
        samples.setdefault("record.d20.trace_bytes", []).append(delta("vramtrace", 3) / events)


def measure_recording(tools, p, samples):
    for rep in range(p["reps"]):
        for cfg in [c for c in RECORD_CONFIGS if wanted(p, c[0])]:
            progress(f"recording: repetition {rep + 1}/{p['reps']}, {cfg[0]}, pairs {p['pairs']}")
            record_rep(tools, p["pairs"], cfg, samples)


# ---- memory per live allocation ------------------------------------------------

def measure_memory(tools, p, samples):
    """Peak RSS at two live counts with and without the preload; keeps the
    preload's traces (live.N.vtrace) for the report."""
    lo, hi = p["live"]
    for rep in range(p["mem_reps"]):
        progress(f"preload memory: repetition {rep + 1}/{p['mem_reps']}, live {p['live']}")
        rss = {}
        for n in (lo, hi):
            args = [tools.prog, "live", str(n), "20"]
            rss[("plain", n)] = tools.run(args, tools.env)[2]
            rss[("vt", n)] = tools.run(args, tools.vt_env(os.path.join(tools.tmp, f"live.{n}.vtrace")))[2]
        sim = (rss[("plain", hi)] - rss[("plain", lo)]) * 1024 / (hi - lo)
        vt = (rss[("vt", hi)] - rss[("vt", lo)]) * 1024 / (hi - lo)
        samples.setdefault("memory.sim", []).append(sim)
        samples.setdefault("memory.preload", []).append(vt - sim)


# ---- the report ------------------------------------------------------------------

def report_run(tools, trace):
    return tools.run([tools.vt, "report", "-q", "--json", "/dev/null", trace], tools.env)


def heaptrack_trace(tools, mode, n):
    """heaptrack's trace of `preload_overhead MODE N 1` (the anchor's input):
    its path."""
    out = os.path.join(tools.tmp, f"hprint.{mode}.{n}")  # not ht*: pairs() removes those
    tools.run([HEAPTRACK, "-o", out, tools.prog, mode, str(n), "1"], tools.env, cwd=tools.tmp)
    found = [f for f in os.listdir(tools.tmp) if f.startswith(os.path.basename(out) + ".")]
    if len(found) != 1:
        raise Failed(f"heaptrack -o {out} left {found or 'no file'}, not one trace")
    return os.path.join(tools.tmp, found[0])


def heaptrack_print_run(tools, trace):
    if not HEAPTRACK_PRINT:
        raise Failed("heaptrack_print is missing (heaptrack's package has it)")
    return tools.run([HEAPTRACK_PRINT, "-f", trace], tools.env)


def report_pair(tools, reps, traces, events, key, samples, anchors):
    """events/s from the difference of two traces' report times, and the same
    of heaptrack_print on anchors (heaptrack's traces of the same shape and
    sizes) in the same repetition, and their ratio; the two traces' max RSS
    per rep are returned for the caller."""
    rss = []
    for rep in range(reps):
        progress(f"report: {key}, repetition {rep + 1}/{reps}")
        lo, hi = report_run(tools, traces[0]), report_run(tools, traces[1])
        hlo, hhi = heaptrack_print_run(tools, anchors[0]), heaptrack_print_run(tools, anchors[1])
        vt = events / (hi[0] - lo[0]) / 1e6
        ht = events / (hhi[0] - hlo[0]) / 1e6
        samples.setdefault(f"report.{key}.events_per_s", []).append(vt)
        samples.setdefault(f"report.{key}.events_per_s_cpu", []).append(events / (hi[1] - lo[1]) / 1e6)
        samples.setdefault(f"report.{key}.heaptrack", []).append(ht)
        samples.setdefault(f"report.{key}.heaptrack_cpu", []).append(events / (hhi[1] - hlo[1]) / 1e6)
        samples.setdefault(f"report.{key}.vs_heaptrack", []).append(vt / ht)
        rss.append((lo[2], hi[2]))
    return rss


def measure_stacks(tools, p, samples):
    """Peak RSS of the report per distinct call stack: the difference between
    traces of lo and hi stacks (many_stacks_prog: 2^k allocations, each from
    its own stack), over the difference of their counts."""
    lo, hi = p["stacks"]
    traces = []
    for n in (lo, hi):
        path = os.path.join(tools.tmp, f"stacks.{n}.vtrace")
        progress(f"report: recording a trace of {n} distinct call stacks")
        tools.run([tools.many_stacks, str(n.bit_length() - 1)], tools.vt_env(path))
        traces.append(path)
    for rep in range(p["mem_reps"]):
        progress(f"report: stacks, repetition {rep + 1}/{p['mem_reps']}")
        a, b = report_run(tools, traces[0])[2], report_run(tools, traces[1])[2]
        samples.setdefault("report.stacks.bytes_per_stack", []).append((b - a) * 1024 / (hi - lo))


def measure_report(tools, p, samples):
    if wanted(p, "storm"):
        measure_storm(tools, p, samples)
    if wanted(p, "stacks"):
        measure_stacks(tools, p, samples)
    if not wanted(p, "live"):
        return
    lo, hi = p["live"]
    traces = [os.path.join(tools.tmp, f"live.{n}.vtrace") for n in (lo, hi)]
    progress(f"report: heaptrack's traces of {lo} and {hi} mallocs never freed")
    anchors = [heaptrack_trace(tools, "mlive", n) for n in (lo, hi)]
    rss = report_pair(tools, p["reps"], traces, hi - lo, "live", samples, anchors)
    samples["report.live.bytes_per_live"] = [(r[1] - r[0]) * 1024 / (hi - lo) for r in rss]


def measure_storm(tools, p, samples):
    traces = []
    for n in p["storm"]:
        path = os.path.join(tools.tmp, f"storm.{n}.vtrace")
        progress(f"report: writing a {n}-event storm trace")
        tools.run([tools.bench_report, tools.vt, str(n), "--keep", path], tools.env)
        traces.append(path)
    lo, hi = p["storm"]
    progress(f"report: heaptrack's traces of malloc storms of {lo} and {hi} events")
    anchors = [heaptrack_trace(tools, "storm", n) for n in (lo, hi)]
    rss = report_pair(tools, p["reps"], traces, hi - lo, "storm", samples, anchors)
    samples["report.storm.max_rss"] = [r[1] / 1024 for r in rss]


# ---- GAN training under callgrind --------------------------------------------------

# The part of the preload's added instructions that no change to its recording
# code removes: the trace's compression (libzstd, the library's own level 1)
# and the loader's work for the preload and its libraries (ld.so).
FIXED_OBJECTS = {"zstd": "libzstd.so", "loader": "ld-linux-x86-64.so"}


def callgrind_objects(out):
    """Self Ir per FIXED_OBJECTS key in a callgrind output (callgrind_annotate)."""
    annotate = shutil.which("callgrind_annotate")
    if not annotate:
        raise Failed("callgrind_annotate is missing (valgrind's package has it)")
    text = subprocess.run([annotate, "--inclusive=no", "--threshold=100", out], check=True,
                          capture_output=True, text=True).stdout
    sums = dict.fromkeys(FIXED_OBJECTS, 0)
    for m in re.finditer(r"^\s*([\d,]+) \([ \d.]+%\)\s+\S.*\[([^\]]*)\]\s*$", text, re.M):
        obj = os.path.basename(m.group(2))
        for key, prefix in FIXED_OBJECTS.items():
            if obj.startswith(prefix):
                sums[key] += int(m.group(1).replace(",", ""))
    return sums


def callgrind_ir(tools, env, steps, objects=False):
    """Total Ir of all threads of the GAN training under callgrind; with
    objects, also callgrind_objects' sums: (total, sums)."""
    out = os.path.join(tools.tmp, "callgrind.out")
    cmd = [VALGRIND, "--tool=callgrind", f"--callgrind-out-file={out}", tools.train,
           "--synthetic", "--memory-only", "--log-every", "1000", "--steps", str(steps)]
    tools.run(cmd, env, cwd=tools.tmp)
    with open(out) as f:
        m = re.search(r"^totals:\s+(\d+)", f.read(), re.M)
    sums = callgrind_objects(out) if objects and m else None
    os.unlink(out)
    if not m:
        raise Failed(f"no totals: line in callgrind's output of {' '.join(cmd)}")
    return (int(m.group(1)), sums) if objects else int(m.group(1))


def measure_gan(tools, p, samples):
    if not VALGRIND:
        raise Failed("valgrind is not installed (the README's install command has it)")
    ir, fixed = {}, {}
    for steps in (p["gan_steps_lo"], p["gan_steps"]):
        progress(f"GAN training, {steps} steps, under callgrind without the preload")
        plain, fixed["plain"] = callgrind_ir(tools, tools.env, steps, objects=True)
        progress(f"GAN training, {steps} steps, under callgrind with the preload")
        traced, fixed["traced"] = callgrind_ir(
            tools, tools.vt_env(os.path.join(tools.tmp, "gan.vtrace")), steps, objects=True)
        ir[steps] = (plain, traced)
    plain, traced = ir[p["gan_steps"]]
    for key in FIXED_OBJECTS:
        samples[f"gan.ir_{key}"] = [fixed["traced"][key] - fixed["plain"][key]]
    samples["gan.overhead_fixed"] = [sum(samples[f"gan.ir_{k}"][0] for k in FIXED_OBJECTS) * 100.0 / plain]
    progress(f"GAN training, {p['gan_steps']} steps, under callgrind with the preload, stacks off")
    off = callgrind_ir(tools, tools.vt_env(os.path.join(tools.tmp, "gan.vtrace"), 0), p["gan_steps"])
    samples["gan.overhead_stacks_off"] = [(off - plain) * 100.0 / plain]
    samples["gan.ir_plain"] = [plain]
    samples["gan.ir_vramtrace"] = [traced]
    samples["gan.overhead"] = [(traced - plain) * 100.0 / plain]
    # the difference of the two sizes: per step, start-up cancelled
    (plain_lo, traced_lo), n = ir[p["gan_steps_lo"]], p["gan_steps"] - p["gan_steps_lo"]
    step_plain = (plain - plain_lo) / n
    step_added = ((traced - plain) - (traced_lo - plain_lo)) / n
    samples["gan.step_ir_plain"] = [step_plain]
    samples["gan.step_ir_added"] = [step_added]
    samples["gan.startup_ir_added"] = [(traced_lo - plain_lo) - step_added * p["gan_steps_lo"]]
    samples["gan.step_overhead"] = [step_added * 100.0 / step_plain]


# ---- output ------------------------------------------------------------------

def machine_info():
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip() or "unknown"
    return [("cpu", cpu), ("cores", str(os.cpu_count())), ("kernel", os.uname().release),
            ("commit", git), ("loadavg_start", " ".join(f"{x:.2f}" for x in os.getloadavg()))]


def fmt(v):
    return f"{v:.0f}" if abs(v) >= 1e6 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


def print_figures(samples, p):
    for key, unit, target, row, _ in FIGURES:
        vals = samples.get(key)
        if not vals and not wanted(p, row):
            continue
        if not vals:
            raise Failed(f"figure {key} was not measured")
        line = f"figure {key} {fmt(statistics.median(vals))} {unit}"
        if len(vals) > 1:
            line += f" range {fmt(min(vals))}..{fmt(max(vals))}"
        if target:
            line += f" target {target[0]} {target[1]}"
        print(line, flush=True)


def wanted(p, row):
    """Whether --only (p["only"], None for all) asks for table row `row` (ROWS)."""
    return p["only"] is None or row in p["only"]


def print_info(p):
    for k, v in machine_info():
        print(f"info {k}={v}", flush=True)
    print(f"info date={datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
    print(f"info mode={p['mode']}" + (f" only={','.join(sorted(p['only']))}" if p["only"] else ""))
    print(f"info reps={p['reps']}\ninfo threads={THREADS}\ninfo gan_steps={p['gan_steps']}")
    print(f"info gan_steps_lo={p['gan_steps_lo']}")
    for k in ("pairs", "live", "storm", "stacks"):
        print(f"info {k}={p[k][0]},{p[k][1]}", flush=True)
    print(f"info heaptrack={heaptrack_version()}", flush=True)


def measure(args):
    p = dict(QUICK if args.quick else FULL, mode="quick" if args.quick else "full")
    if args.reps:
        p["reps"] = args.reps
    p["only"] = set(args.only.split(",")) if args.only else None
    samples = {}
    with tempfile.TemporaryDirectory(prefix="vramtrace-perf.") as tmp:
        tools = Tools(os.path.abspath(args.build), tmp)
        print_info(p)
        measure_recording(tools, p, samples)
        if wanted(p, "mem") or wanted(p, "live"):  # the report's "live" reads mem's traces
            measure_memory(tools, p, samples)
        measure_report(tools, p, samples)
        if wanted(p, "gan") or wanted(p, "gan_step"):
            measure_gan(tools, p, samples)
    print_figures(samples, p)
    print(f"info loadavg_end={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"info seconds={time.monotonic() - T0:.0f}")
    progress("done")


def heaptrack_version():
    if not HEAPTRACK:
        raise Failed("heaptrack is not installed (the README's install command has it)")
    out = subprocess.run([HEAPTRACK, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+\.\d+(\.\d+)?)", out)
    return m.group(1) if m else "unknown"


# ---- reading an output back ------------------------------------------------

NUM = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def parse(path):
    """Returns (info dict, figures dict key -> (median, range or None));
    raises Failed naming each figure missing or not a number."""
    info, figs, bad = {}, {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("info "):
                k, _, v = line[5:].rstrip("\n").partition("=")
                info[k] = v
            elif line.startswith("figure "):
                m = re.match(rf"figure (\S+) ({NUM}) (\S+)(?: range ({NUM})\.\.({NUM}))?", line)
                if not m:
                    bad.append(line.split()[1] if len(line.split()) > 1 else line.strip())
                    continue
                rng = (float(m.group(4)), float(m.group(5))) if m.group(4) else None
                figs[m.group(1)] = (float(m.group(2)), rng)
    missing = [k for k, *_ in FIGURES if k not in figs]
    if bad or missing:
        raise Failed(f"{path}: not a number: {', '.join(bad) or '-'}; missing: {', '.join(missing) or '-'}")
    return info, figs


def check(path):
    info, figs = parse(path)
    for k in ("cpu", "cores", "date", "mode"):
        if k not in info:
            raise Failed(f"{path}: no info {k}=")
    print(f"{path}: {len(figs)} figures, all numbers ({info['mode']} run)")


# ---- the README's table ------------------------------------------------------------

BEGIN = "<!-- measured:begin (generated by bench/perf.py --readme from bench/measured.txt; do not edit) -->"
END = "<!-- measured:end -->"
COLUMNS = ["vramtrace", "heaptrack", "floor"]


def cell(key, figs):
    """One figure as the table shows it: median, the range, the unit."""
    unit = next(u for k, u, *_ in FIGURES if k == key)
    v, rng = figs[key]
    unit = {"ns/event": " ns", "B/live": " B", "M/s": " M events/s", "MiB": " MiB max RSS", "%": " %",
            "ratio": " × heaptrack_print's events/s",
            "x_heaptrack_ns": " × heaptrack's added ns"}.get(unit, " " + unit)
    s = fmt(v) + unit
    return s + (f" ({fmt(rng[0])} to {fmt(rng[1])})" if rng else "")


def target_text(key, target):
    unit = cell(key, {key: (target[1], None)}).split(" ", 1)[1]
    return f"{'≤' if target[0] == '<=' else '≥'} {target[1]} {unit}"


def row_cells(row, figs):
    cells = {c: [] for c in COLUMNS + ["plain"]}
    for key, _, _, r, col in FIGURES:
        if r == row and col:
            cpu = f"; CPU {cell(key + '_cpu', figs)}" if key + "_cpu" in figs else ""
            cells[col].append(cell(key, figs) + cpu)
    if row == "gan":
        cells["plain"] = [f"{figs['gan.ir_plain'][0] / 1e6:.1f} M Ir (with: {figs['gan.ir_vramtrace'][0] / 1e6:.1f} M)"]
        cells["vramtrace"].append(f"of which {fmt(figs['gan.overhead_fixed'][0])} % is the trace's "
                                  f"compression ({figs['gan.ir_zstd'][0] / 1e6:.2f} M Ir in zstd) and the "
                                  f"loader's ({figs['gan.ir_loader'][0] / 1e6:.2f} M Ir in ld.so)")
    if row == "gan_step":
        cells["vramtrace"] = [f"{figs['gan.step_ir_added'][0] / 1e3:.1f} k Ir per step, start-up "
                              f"{figs['gan.startup_ir_added'][0] / 1e6:.2f} M Ir, "
                              f"{fmt(figs['gan.step_overhead'][0])} % of a step"]
        cells["plain"] = [f"{figs['gan.step_ir_plain'][0] / 1e3:.1f} k Ir per step"]
    targets = [target_text(k, t) for k, _, t, r, _ in FIGURES if r == row and t]
    return [", ".join(cells[c]) or "—" for c in COLUMNS + ["plain"]] + [", ".join(targets) or "—"]


def count(n):
    """2^k for powers of two from 2^10, else 1 M / 300 k / 20 000."""
    n = int(n)
    if n >= 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return f"{n / 1e6:g} M" if n >= 1000000 else f"{n / 1e3:g} k" if n >= 1000 else str(n)


def labels(info):
    sizes = {"threads": info.get("threads", "?"), "gan_steps": info.get("gan_steps", "?"),
             "gan_steps_lo": info.get("gan_steps_lo", "?")}
    for k in ("pairs", "live", "storm", "stacks"):
        lo, _, hi = info.get(k, "?,?").partition(",")
        sizes[k + "_lo"], sizes[k + "_hi"] = count(lo), count(hi)
    return sizes


def table(info, figs):
    sizes = labels(info)
    lines = [BEGIN, "",
             f"Measured by `bench/perf.py` ({info.get('mode')} run) on {info.get('cpu')} "
             f"({info.get('cores')} cores, no GPU, the simulated device), {info.get('date')}, commit "
             f"{info.get('commit')}, heaptrack {info.get('heaptrack')}; load average "
             f"{info.get('loadavg_start')} at the start, {info.get('loadavg_end')} at the end: a shared "
             "machine, wall times are noisy. Recording: wall ns added per event (a cudaMalloc or a "
             f"cudaFree), the difference between runs of {sizes['pairs_lo']} and {sizes['pairs_hi']} "
             "pairs minus the same difference of the program alone, median of "
             f"{info.get('reps')} interleaved repetitions (range in brackets); heaptrack on malloc/free "
             "of the same shape; floor: a bare hook plus libunwind's cached `unw_backtrace` "
             "(`bench/floor_preload.c`). \"CPU\": the same from user+system CPU time of the whole "
             "process tree (vramtrace's writer thread, heaptrack_interpret), steadier than wall time "
             "on a loaded machine. \"Without a tool\": the program alone, per event (not added). "
             "The full output: `bench/measured.txt`.", "",
             "| what | vramtrace | heaptrack | floor | without a tool | target (vramtrace) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row, label in ROWS:
        lines.append("| " + " | ".join([label.format(**sizes)] + row_cells(row, figs)) + " |")
    lines += ["", END]
    return "\n".join(lines)


def update_readme(readme, output):
    info, figs = parse(output)
    with open(readme) as f:
        text = f.read()
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        raise Failed(f"{readme}: no {BEGIN} ... {END} block")
    with open(readme, "w") as f:
        f.write(text[:b] + table(info, figs) + text[e + len(END):])
    print(f"{readme}: Measured table regenerated from {output}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 repetition (smoke test)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build tree (default: build)")
    ap.add_argument("--reps", type=int, help="repetitions (default 5, --quick 1)")
    ap.add_argument("--only", metavar="PARTS",
                    help="measure only these rows, comma-separated: d5,d20,d60,off,t8,mem,storm,live,stacks,gan,gan_step "
                         "(default: all); for work on one figure, not for the README")
    ap.add_argument("--check", metavar="OUTPUT", help="check that OUTPUT has every figure, each a number")
    ap.add_argument("--readme", nargs=2, metavar=("README", "OUTPUT"),
                    help="regenerate README's Measured table from OUTPUT")
    args = ap.parse_args()
    if args.only and not set(args.only.split(",")) <= {r[0] for r in ROWS}:
        ap.error(f"--only takes a comma-separated list of {','.join(r[0] for r in ROWS)}")
    if args.reps is not None and args.reps < 1:
        ap.error("--reps must be at least 1")
    try:
        if args.check:
            check(args.check)
        elif args.readme:
            update_readme(*args.readme)
        else:
            measure(args)
    except (Failed, OSError) as e:
        print(f"perf.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
