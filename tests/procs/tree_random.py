#!/usr/bin/env python3
"""Random process trees under `vramtrace run`, against the simulated device's
ledger.

For each seed, writes a Python program whose processes allocate and free
device memory on two simulated T4s through ctypes on libcudart
(cudaSetDevice, cudaMalloc, cudaFree) and start children in random ways:
subprocess (waited for, or left running while the parent goes on), os.system
(through /bin/sh), a bash pipeline, fork + exec, multiprocessing's spawn
context, and fork without exec before the process touches CUDA (--fork);
each exits in a random way (return, sys.exit, raising SystemExit,
os._exit, SIGKILL but the program itself). All processes append to one
ledger (VRAMTRACE_SIM_LEDGER, the sim's own record, sim/README.md
"Ledger"); a process that ends without the sim's exit line (os._exit,
SIGKILL) writes its own CLOCK_MONOTONIC death time first.
Checks:

* every process that allocated has a trace of the run, and no other does;
* each trace's accounting and device totals = the ledger's lines of its pid
  (tests/ledger/check_ledger.py --devices);
* the run section's peak of the sum over processes, per device = the most
  device bytes live at once over all processes in the ledger's time order, a
  process's bytes gone at its end; where a killed process's end is not
  recorded, the ledger's peak lies between peak_of_sum_bytes (its memory
  gone at its last event) and peak_of_sum_held_bytes (held to the run's
  end). The traces' times of the allocations and frees (the run's --chrome
  export, all processes on one timeline) and of the processes' ends must be
  the ledger's moved as one, give or take their spread (at most
  MAX_SPREAD_NS): the ledger stamps a call inside the driver, the recorder
  just after it returns; the recorder ends a trace in its exit handler, the
  sim writes its exit line in its own. Where events
  of two processes near the peak are closer than that spread, their order
  is known to neither side: the report's peak must then lie within the
  peaks of the orders that allow, one process's timeline moved against
  another's by up to the spread; elsewhere exactly.

    tree_random.py --vramtrace BIN --ledger-check PY --work DIR --seeds A-B
        [--fork] [--wrong]

--fork: also children forked without exec that use CUDA (each records its
  own trace: interpose/README.md "Fork"), held like the others.
--wrong: the ledger's first allocation never freed 4096 B larger: exit 0
  only if every seed catches it.

Exit: 0 all held, 1 a check failed, 3 the harness could not run. Standard
library only.
"""
import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402  tests/seeds.py

MODES = ["popen", "popen", "system", "fork_exec", "mp_spawn", "bash_pipe", "popen_nowait"]
EXITS = ["return", "return", "return", "sys_exit", "os_exit", "raise", "sigkill"]

PROGRAM = r'''import ctypes, json, multiprocessing, os, signal, subprocess, sys, time
SPEC = json.loads(%r)
PROG = os.path.abspath(__file__)
DEATHS = os.environ["TREE_DEATHS"]
rt = None


def cuda():
    global rt
    if rt is None:
        rt = ctypes.CDLL("libcudart.so.13")
    return rt


def spawn(mode, cid):
    py = sys.executable
    if mode == "popen":
        subprocess.run([py, PROG, str(cid)], check=False)
    elif mode == "popen_nowait":
        return subprocess.Popen([py, PROG, str(cid)])
    elif mode == "system":
        os.system(f"'{py}' '{PROG}' {cid}")
    elif mode == "bash_pipe":
        subprocess.run(["bash", "-c", f"'{py}' '{PROG}' {cid} | cat > /dev/null"], check=False)
    elif mode == "fork_exec":
        pid = os.fork()
        if pid == 0:
            os.execv(py, [py, PROG, str(cid)])
        os.waitpid(pid, 0)
    elif mode == "fork":
        pid = os.fork()
        if pid == 0:
            node(cid)
            died()
            os._exit(0)
        os.waitpid(pid, 0)
    elif mode == "mp_spawn":
        p = multiprocessing.get_context("spawn").Process(target=node, args=(cid,))
        p.start()
        p.join()
    return None


def died():
    with open(DEATHS, "a") as f:
        f.write(f"{os.getpid()} {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}\n")


def node(nid):
    spec = SPEC[str(nid)]
    kept, waits = [], []
    for step in spec["steps"]:
        if step[0] == "alloc":
            dev, size, free = step[1:]
            r = cuda()
            r.cudaSetDevice(dev)
            p = ctypes.c_void_p()
            if r.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size)) != 0:
                continue
            if free:
                r.cudaFree(p)
            else:
                kept.append(p)
        elif step[0] == "free_kept":
            if kept:
                cuda().cudaFree(kept.pop(0))
        else:
            w = spawn(step[1], step[2])
            if w:
                waits.append(w)
    for w in waits:
        w.wait()
    how = spec["exit"]
    sys.stdout.flush()
    if how == "sys_exit":
        sys.exit(3)
    if how == "os_exit":
        died()
        os._exit(4)
    if how == "raise":
        raise SystemExit(5)
    if how == "sigkill":
        died()
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    node(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
'''


def program(seed, fork):
    """The program for seed: PROGRAM with its tree."""
    rnd = random.Random(seed)
    spec, sizes, todo, next_id = {}, set(), [(0, 0)], 1
    while todo:
        nid, depth = todo.pop(0)
        steps, used_cuda = [], False
        for _ in range(rnd.randint(1, 6)):
            r = rnd.random()
            if r < 0.3 and depth < 3 and next_id < 10:
                # fork without exec only before this process touches CUDA
                mode = rnd.choice(MODES + (["fork"] * len(MODES) if fork and not used_cuda else []))
                steps.append(["child", mode, next_id])
                todo.append((next_id, depth + 1))
                next_id += 1
            elif r < 0.85:
                size = 0
                while not size or size in sizes:
                    size = rnd.randint(1, 2048) * 4096
                sizes.add(size)
                steps.append(["alloc", rnd.randrange(2), size, rnd.random() < 0.5])
                used_cuda = True
            else:
                steps.append(["free_kept"])
        # the program itself is not killed: vramtrace run records its end
        spec[str(nid)] = {"steps": steps, "exit": rnd.choice(EXITS if nid else EXITS[:-1])}
    return PROGRAM % json.dumps(spec), spec


# The most the recorder's timestamps may lie off the ledger's (the ledger
# stamps a call inside the simulated driver, the recorder just after it
# returns; a process may be descheduled between the two): more, and the
# trace's timeline is wrong.
MAX_SPREAD_NS = 50_000_000


def trace_times(o, d):
    """(pid, device) -> the times (ns) of the run's device allocations and
    frees as its processes' traces have them (the run's --chrome export: one
    counter event after each, all processes on one timeline)."""
    events = seeds.report_json(o.vramtrace, "--chrome", os.path.join(d, "run.chrome.json"),
                               os.path.join(d, "run.vtrace"))["traceEvents"]
    times = {}
    for e in events:
        if e.get("ph") == "C" and e.get("name", "").startswith("device "):
            times.setdefault((e["pid"], int(e["name"].split()[1])), []).append(e["ts"] * 1000.0)
    return times


def stamp_spread(lines, times, files):
    """How far apart (ns) the differences between the ledger's and the
    traces' times of the same events lie: 0 when the traces' timeline is the
    ledger's moved as one; None when the events do not pair up. The events:
    each device allocation and free, and each process's end (the ledger's
    exit line; the trace's end, its start_mono_ns + duration_ns on the
    Chrome export's timeline, which starts at the run's first start)."""
    ledger = {}
    for l in lines:
        if l.get("op") in ("alloc", "free") and l.get("kind") == "device":
            ledger.setdefault((l["pid"], l["device"]), []).append(l["t_ns"])
    if {k: len(v) for k, v in ledger.items()} != {k: len(v) for k, v in times.items()}:
        return None
    offs = [l - t for k in ledger for l, t in zip(ledger[k], times[k])]
    first = min((one["program"]["start_mono_ns"] for one in files), default=0)
    ends = {l["pid"]: l["t_ns"] for l in lines if l.get("op") == "exit"}
    for one in files:
        pr = one["program"]
        if pr["pid"] in ends and pr["exit"] is not None:
            offs.append(ends[pr["pid"]] - (pr["start_mono_ns"] - first + pr["duration_ns"]))
    return int(max(offs) - min(offs)) if offs else 0


def live_windows(lines, deaths):
    """Each device allocation of the ledger as (pid, device, size, start,
    end): from its line to its free, its process's exit line or death time
    (end None: never)."""
    events = [(l["t_ns"], 0, l) for l in lines]
    events += [(t, 1, {"op": "death", "pid": pid}) for pid, t in deaths.items()]
    live, out = {}, []
    for t, _, l in sorted(events, key=lambda e: (e[0], e[1])):
        op = l.get("op")
        if op == "alloc" and l.get("kind") == "device":
            live[(l["pid"], l["addr"])] = (l["pid"], l["device"], l["size"], t)
        elif op == "free" and (l["pid"], l["addr"]) in live:
            out.append(live.pop((l["pid"], l["addr"])) + (t,))
        elif op in ("exit", "death"):
            for k in [k for k in live if k[0] == l["pid"]]:
                out.append(live.pop(k) + (t,))
    return out + [w + (None,) for w in live.values()]


def _value(per, t):
    """A process's bytes live just after instant t (per: its sorted steps)."""
    return sum(x for u, x in per if u <= t)


def _range(per, a, b):
    """The least and most bytes a process had live within [a, b]."""
    lo = hi = cur = _value(per, a)
    for u, x in per:
        if a < u <= b:
            cur += x
            lo, hi = min(lo, cur), max(hi, cur)
    return lo, hi


def run_peaks(windows, race=0):
    """device -> (least, most): the most device bytes live at once over all
    processes when any two processes' timelines may lie up to race ns apart
    from the ledger's (each its own order kept); race 0: the ledger's order,
    least == most. The peak comes just after a step of some process q at s:
    q's bytes then, and each other's least (most) within [s - race, s + race]."""
    steps = {}  # device -> pid -> [(t, bytes)]
    for pid, dev, size, a, b in windows:
        per = steps.setdefault(dev, {}).setdefault(pid, [])
        per.append((a, size))
        if b is not None:
            per.append((b, -size))
    out = {}
    for dev, procs in steps.items():
        for per in procs.values():
            per.sort()
        least = most = 0
        for q, mine in procs.items():
            for s, _ in mine:
                ranges = [_range(per, s - race, s + race) for p, per in procs.items() if p != q]
                own = _value(mine, s)
                least = max(least, own + sum(r[0] for r in ranges))
                most = max(most, own + sum(r[1] for r in ranges))
        out[dev] = (least, most)
    return out


def check_run(o, d, stats):
    """The run in d against its ledger; a list of what differs."""
    ledger = os.path.join(d, "ledger.jsonl")
    lines = [json.loads(l) for l in open(ledger)] if os.path.exists(ledger) else []
    deaths = {}
    if os.path.exists(os.path.join(d, "deaths")):
        for l in open(os.path.join(d, "deaths")):
            pid, t = l.split()
            deaths[int(pid)] = int(t)
    allocating = {l["pid"] for l in lines if l.get("op") in ("alloc", "fail")}
    traces = glob.glob(os.path.join(d, "run*.vtrace"))
    errors, rep = [], {}
    if traces:
        rep = seeds.report_json(o.vramtrace, "--json", os.path.join(d, "run.json"),
                                os.path.join(d, "run.vtrace"))
    files = rep.get("files", [rep] if rep else [])
    pids = {one["program"]["pid"] for one in files}
    if pids != allocating:
        errors.append(f"traces of pids {sorted(pids)}, processes that allocated {sorted(allocating)}")
    for one in files:
        pid = one["program"]["pid"]
        jj = os.path.join(d, f"report.{pid}.json")
        with open(jj, "w") as f:
            json.dump(one, f)
        p = subprocess.run([sys.executable, o.ledger_check, "--ledger", ledger, "--report", jj,
                            "--pid", str(pid), "--devices"], capture_output=True, text=True)
        if p.returncode != 0:
            errors.append(f"pid {pid} against the ledger: {p.stdout.strip()[-600:]}")
    if len(files) > 1:
        windows = live_windows(lines, deaths)
        spread = stamp_spread(lines, trace_times(o, d), files)
        if spread is None or spread > MAX_SPREAD_NS:
            errors.append(f"the traces' allocations and frees do not pair with the ledger's "
                          f"on one timeline (--chrome; spread {spread} ns)")
            spread = MAX_SPREAD_NS
        stats["spread"] = max(stats.get("spread", 0), spread)
        want, raced = run_peaks(windows), run_peaks(windows, spread)
        runs = rep.get("runs", [])
        devs = {dev["device"]: dev for dev in runs[0]["devices"]} if runs else {}
        killed = any(one["program"]["exit"] is None for one in files)  # end not recorded
        for dev in sorted(set(want) | set(devs)):
            lo = devs.get(dev, {}).get("peak_of_sum_bytes", 0)
            hi = devs.get(dev, {}).get("peak_of_sum_held_bytes", 0)
            w, (w_lo, w_hi) = want.get(dev, (0, 0))[0], raced.get(dev, (0, 0))
            # a killed process's end is not recorded: the truth lies between
            # the sum with its memory gone at its last event and held to the
            # run's end; else both are the truth. Exact where no two
            # processes' events near the peak are closer than the spread
            # of the recorder's timestamps (w_lo == w_hi); else within what
            # those events' orders allow.
            if w_lo == w_hi:
                bad = not (lo <= w <= hi) or (lo != hi and not killed) or (lo == hi and lo != w)
            else:
                bad = hi < w_lo or lo > w_hi or (lo != hi and not killed)
                stats["raced"] = stats.get("raced", 0) + 1
            stats["devices"] = stats.get("devices", 0) + 1
            if bad:
                errors.append(f"device {dev}: peak of the sum over processes {lo} B (held to "
                              f"the run's end: {hi} B), ledger {w} B"
                              + (f" ({w_lo} to {w_hi} B in the orders that events closer than "
                                 f"{spread} ns allow)" if w_lo != w_hi else ""))
    return errors


def run_seed(o, seed):
    d = os.path.join(o.work, str(seed))
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(d)
    text, _ = program(seed, o.fork)
    prog = os.path.join(d, "prog.py")
    with open(prog, "w") as f:
        f.write(text)
    env = dict(os.environ, VRAMTRACE_SIM_DEVICES="2", VRAMTRACE_SIM_DEVICE="t4",
               VRAMTRACE_SIM_LEDGER=os.path.join(d, "ledger.jsonl"),
               TREE_DEATHS=os.path.join(d, "deaths"))
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([o.vramtrace, "run", "--sim", "-o", "run.vtrace", "--", sys.executable, prog],
                       cwd=d, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode not in (0, 3, 4, 5):
        raise RuntimeError(f"seed {seed}: the program exited {p.returncode}: {p.stderr[-400:]}")
    if o.wrong and os.path.exists(os.path.join(d, "ledger.jsonl")):
        path = os.path.join(d, "ledger.jsonl")
        lines = open(path).read().splitlines()
        parsed = [json.loads(l) for l in lines]
        live = {}  # (pid, addr) -> line index of the live allocation there
        for i, l in enumerate(parsed):
            if l["op"] == "alloc":
                live[(l["pid"], l["addr"])] = i
            elif l["op"] == "free":
                live.pop((l["pid"], l["addr"]), None)
        # an allocation never freed: its size is in the leaked bytes
        allocs = [i for i, l in enumerate(parsed) if l["op"] == "alloc"]
        k = min(live.values()) if live else (allocs[0] if allocs else None)
        if k is not None:
            l = json.loads(lines[k])
            l["size"] += 4096
            lines[k] = json.dumps(l, separators=(",", ":"))
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
    return check_run(o, d, o.stats)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    seeds.add_arguments(ap)
    ap.add_argument("--ledger-check", required=True, help="tests/ledger/check_ledger.py")
    ap.add_argument("--fork", action="store_true")
    o = ap.parse_args()
    o.stats = {}
    rc = seeds.run_seeds(lambda seed: run_seed(o, seed), o)
    n, raced = o.stats.get("devices", 0), o.stats.get("raced", 0)
    print(f"peaks of the sum over processes: {n} held, {n - raced} exactly, {raced} within the "
          f"orders that events of two processes closer than the recorder's timestamps' spread "
          f"allow (at most {o.stats.get('spread', 0) / 1000:.1f} us)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
