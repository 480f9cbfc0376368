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
  end).

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


def run_peaks(lines, deaths):
    """device -> most device bytes live at once over all processes, in time
    order; a process's bytes are gone at its exit line or its death time."""
    events = [(l["t_ns"], 0, l) for l in lines]
    events += [(t, 1, {"op": "death", "pid": pid}) for pid, t in deaths.items()]
    live, cur, peak = {}, {}, {}
    for _, _, l in sorted(events, key=lambda e: (e[0], e[1])):
        op = l.get("op")
        if op == "alloc" and l.get("kind") == "device":
            live[(l["pid"], l["addr"])] = (l["device"], l["size"])
            cur[l["device"]] = cur.get(l["device"], 0) + l["size"]
            peak[l["device"]] = max(peak.get(l["device"], 0), cur[l["device"]])
        elif op == "free" and (l["pid"], l["addr"]) in live:
            dev, size = live.pop((l["pid"], l["addr"]))
            cur[dev] -= size
        elif op in ("exit", "death"):
            for k in [k for k in live if k[0] == l["pid"]]:
                dev, size = live.pop(k)
                cur[dev] -= size
    return peak


def check_run(o, d):
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
        j = os.path.join(d, "run.json")
        p = subprocess.run([o.vramtrace, "report", "-q", "--json", j, os.path.join(d, "run.vtrace")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return [f"report exited {p.returncode}: {p.stderr[-300:]}"]
        with open(j) as f:
            rep = json.load(f)
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
        want = run_peaks(lines, deaths)
        runs = rep.get("runs", [])
        devs = {dev["device"]: dev for dev in runs[0]["devices"]} if runs else {}
        killed = any(one["program"]["exit"] is None for one in files)  # end not recorded
        for dev in sorted(set(want) | set(devs)):
            lo = devs.get(dev, {}).get("peak_of_sum_bytes", 0)
            hi = devs.get(dev, {}).get("peak_of_sum_held_bytes", 0)
            w = want.get(dev, 0)
            # a killed process's end is not recorded: the truth lies between
            # the sum with its memory gone at its last event and held to the
            # run's end; else both are the truth
            if not (lo <= w <= hi) or (lo != hi and not killed) or (lo == hi and lo != w):
                errors.append(f"device {dev}: peak of the sum over processes {lo} B (held to "
                              f"the run's end: {hi} B), ledger {w} B")
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
    return check_run(o, d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    seeds.add_arguments(ap)
    ap.add_argument("--ledger-check", required=True, help="tests/ledger/check_ledger.py")
    ap.add_argument("--fork", action="store_true")
    o = ap.parse_args()
    return seeds.run_seeds(lambda seed: run_seed(o, seed), o)


if __name__ == "__main__":
    sys.exit(main())
