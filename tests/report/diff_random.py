#!/usr/bin/env python3
"""`vramtrace diff` of two runs of random programs, and each run's own
exports, against the programs' own allocations.

For each seed, one Python program (cudaMalloc and cudaFree through ctypes on
the simulated T4) with SITES allocating functions at fixed lines runs twice
on two random lists of operations: BEFORE, and AFTER drawn from it (sites
that allocate more or less, allocate or free other sizes, leak or stop
leaking, appear or disappear). The truth is the lists themselves, replayed:
per site, the bytes live at the peak (the first instant allocated bytes reach
their maximum, docs/report.md "Peak"), the bytes leaked at exit and the
bytes live at the fatal failure (a 64 GiB allocation from one site, never
retried, in some runs); the totals' peak, leaked, live at the fatal failure
and unrecovered failures. Each run's report is held to its truth too: the
--folded bytes at the peak per site, the --chrome allocated-bytes counter
after every allocation and free and its leak events, and --json's failure:
its live bytes and the device use outside the recording (the context's
VRAMTRACE_SIM_CONTEXT_RESERVE at the start, nothing since once the driver's
rounding of the recorded allocations is set aside). `vramtrace diff --json` must give each site (found
by its function site_K in the stack) exactly those, before, after and
delta; a site the diff leaves out must be zero in both; sites sorted by
change.

    diff_random.py --vramtrace BIN --work DIR --seeds A-B [--devices N] [--wrong]

--devices N: N simulated T4s, each allocation (and failure) on one of them
  (its own in both runs); the peak is the sum over devices, a failure's
  sites what is live on its device, the Chrome counter one per device.
--wrong: one leaked allocation of the truth 4096 B larger: exit 0 only if
  every seed catches it.

Exit: 0 all held, 1 a check failed, 3 the harness could not run. Standard
library only.
"""
import argparse
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import seeds  # noqa: E402  tests/seeds.py

SITES = 12
RESERVE = 100 << 20  # the context's use, VRAMTRACE_SIM_CONTEXT_RESERVE

PROGRAM = '''import ctypes, json, sys
rt = ctypes.CDLL("libcudart.so.13")
HUGE = 1 << 36  # 64 GiB: more than the T4 has, its allocation fails


def alloc(n):
    p = ctypes.c_void_p()
    if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) != 0 and n < HUGE:
        raise SystemExit(3)
    return p


''' + "".join(f"def site_{k}(n):\n    return alloc(n)\n\n\n" for k in range(SITES)) + '''\
SITES = [''' + ", ".join(f"site_{k}" for k in range(SITES)) + ''']


def main():
    live = {}
    for op in json.load(open(sys.argv[1])):
        if op[0] == "a":
            rt.cudaSetDevice(op[4])
            live[op[3]] = SITES[op[1]](op[2])
        elif op[0] == "o":  # out of memory, never retried: fatal
            rt.cudaSetDevice(op[2])
            SITES[op[1]](HUGE)
        elif rt.cudaFree(live.pop(op[1])) != 0:
            raise SystemExit(4)


main()
'''


def ops_before(rnd):
    """A random list: ["a", site, size, id] allocations, ["f", id] frees."""
    ops, live, nid = [], [], 0
    for _ in range(rnd.randint(20, 80)):
        if live and rnd.random() < 0.4:
            ops.append(["f", live.pop(rnd.randrange(len(live)))])
        else:
            site = rnd.randrange(SITES)
            ops.append(["a", site, rnd.randint(1, 2 << 20), nid])
            live.append(nid)
            nid += 1
    return ops + ([["o", rnd.randrange(SITES)]] if rnd.random() < 0.5 else [])


def ops_after(rnd, before):
    """BEFORE changed: per site, sizes scaled, allocations dropped, frees
    dropped (a leak) or added, and a new site's allocations added."""
    scale = {k: rnd.choice([1, 1, 1, 0.5, 2, 3]) for k in range(SITES)}
    gone = {k for k in range(SITES) if rnd.random() < 0.15}
    dropped, ops, owner, nid = set(), [], {}, 1000000
    for op in before:
        if op[0] == "o":  # the failure kept, moved to another site, or gone
            r = rnd.random()
            if r < 0.6:
                ops.append(["o", op[1] if r < 0.3 else rnd.randrange(SITES)])
            continue
        if op[0] == "a":
            if op[1] in gone or rnd.random() < 0.05:
                dropped.add(op[3])
                continue
            owner[op[3]] = op[1]
            ops.append(["a", op[1], max(1, int(op[2] * scale[op[1]])), op[3]])
        elif op[1] not in dropped and rnd.random() > 0.1:  # else now leaked
            ops.append(op)
        if rnd.random() < 0.08:  # a new allocation, sometimes freed at once
            site = rnd.randrange(SITES)
            ops.append(["a", site, rnd.randint(1, 2 << 20), nid])
            if rnd.random() < 0.5:
                ops.append(["f", nid])
            nid += 1
    if not any(op[0] == "o" for op in before) and rnd.random() < 0.3:
        ops.append(["o", rnd.randrange(SITES)])
    return ops


def with_devices(ops, devices):
    """Each allocation and failure gets its device (appended): the same for
    the same allocation id, or failing site, in both runs."""
    for op in ops:
        key = op[3] if op[0] == "a" else 1000000 + op[1] if op[0] == "o" else None
        if key is not None:
            op.append(random.Random(key).randrange(devices))
    return ops


def live_by_site(live, device=None):
    out = {}
    for site, size, dev in live.values():
        if device is None or dev == device:
            out[site] = out.get(site, 0) + size
    return out


def truth(ops):
    """Per site {peak, leaked, oom} and the totals, by replaying ops (a
    failure: what is live on its device); each device's allocated bytes
    after each allocation and free there (series)."""
    live, cur, peak, at_peak, at_oom, fails, series = {}, {}, 0, {}, {}, 0, {}
    for op in ops:
        if op[0] == "o":
            at_oom, fails = live_by_site(live, op[2]), fails + 1
            continue
        if op[0] == "a":
            live[op[3]] = (op[1], op[2], op[4])
            dev = op[4]
            cur[dev] = cur.get(dev, 0) + op[2]
            if sum(cur.values()) > peak:  # the first instant the maximum is reached
                peak, at_peak = sum(cur.values()), live_by_site(live)
        else:
            _, size, dev = live.pop(op[1])
            cur[dev] -= size
        series.setdefault(dev, []).append(cur[dev])
    leaked = live_by_site(live)
    return {"sites": {k: {"peak": at_peak.get(k, 0), "leaked": leaked.get(k, 0),
                          "oom": at_oom.get(k, 0)} for k in range(SITES)},
            "peak": peak, "leaked": sum(leaked.values()), "oom": sum(at_oom.values()),
            "fails": fails, "series": series, "leaked_allocations": len(live)}


def check_exports(o, d, name, want):
    """One run's own report against its truth: --folded (bytes at the peak
    per stack), --chrome (the allocated-bytes counter at every event, the
    leaks at exit) and --json's failure (live bytes, use outside the
    recording: the context reserve the test set, nothing since)."""
    errors, base = [], os.path.join(d, name)
    p = subprocess.run([o.vramtrace, "report", "-q", "--folded", base + ".folded", "--chrome",
                        base + ".chrome.json", "--json", base + ".report.json", base + ".vtrace"],
                       capture_output=True, text=True, errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"{base}: report exited {p.returncode}: {p.stderr[-400:]}")
    folded = {}
    for line in open(base + ".folded"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        k = site_of([{"function": f.split(" (")[0]} for f in stack.split(";")])
        folded[k] = folded.get(k, 0) + int(n)
    got = {k: v for k, v in folded.items() if v}
    exp = {k: s["peak"] for k, s in want["sites"].items() if s["peak"]}
    if got != exp:
        errors.append(f"{name} --folded bytes at the peak per site {got}, truth {exp}")
    with open(base + ".chrome.json") as f:
        ch = json.load(f)
    events = ch["traceEvents"] if isinstance(ch, dict) else ch
    for dev, truth_series in sorted(want["series"].items()):
        series = [e["args"]["allocated"] for e in events
                  if e.get("ph") == "C" and e.get("name") == f"device {dev} memory"]
        if series != truth_series:
            i = next((i for i, (a, b) in enumerate(zip(series, truth_series)) if a != b),
                     min(len(series), len(truth_series)))
            errors.append(f"{name} --chrome device {dev} allocated counter: {len(series)} "
                          f"values, truth {len(truth_series)}; from {i}: {series[i:i + 3]}, "
                          f"truth {truth_series[i:i + 3]}")
    leaks = [e["args"] for e in events if e.get("ph") == "i" and e.get("name") == "leak"]
    got = (sum(a["bytes"] for a in leaks), sum(a["allocations"] for a in leaks))
    if got != (want["leaked"], want["leaked_allocations"]):
        errors.append(f"{name} --chrome leaks {got}, truth "
                      f"{(want['leaked'], want['leaked_allocations'])}")
    with open(base + ".report.json") as f:
        ooms = json.load(f)["ooms"]
    if len(ooms) != want["fails"]:
        errors.append(f"{name}: {len(ooms)} failures in the report, truth {want['fails']}")
    for x in ooms:
        outside = (x["baseline_bytes"], x["external_bytes"] - x["rounding_bytes"])
        if x["live_allocated_bytes"] != want["oom"] or outside != (RESERVE, 0):
            errors.append(f"{name} failure: live {x['live_allocated_bytes']}, used outside the "
                          f"recording at the start and since (rounding aside) {outside}; truth "
                          f"{want['oom']}, {(RESERVE, 0)}")
    return errors


def site_of(stack):
    names = [f.get("function", "") for f in stack]
    found = [n for n in names if n.startswith("site_")]
    return int(found[0][5:]) if len(found) == 1 else None


def check(d, want_b, want_a):
    errors, seen = [], set()
    for s in d.get("sites", []):
        k = site_of(s["stack"])
        if k is None:
            errors.append(f"a site without one site_K frame: {[f.get('function') for f in s['stack']][:6]}")
            continue
        if k in seen:
            errors.append(f"site_{k} listed twice")
        seen.add(k)
        for key in ("peak", "leaked", "oom"):
            b, a = want_b["sites"][k][key], want_a["sites"][k][key]
            got = s.get(key, {})
            if (got.get("before"), got.get("after"), got.get("delta")) != (b, a, a - b):
                errors.append(f"site_{k} {key}: diff {got}, truth before {b} after {a}")
    for k in set(range(SITES)) - seen:
        for key in ("peak", "leaked", "oom"):
            b, a = want_b["sites"][k][key], want_a["sites"][k][key]
            if b or a:
                errors.append(f"site_{k} left out, its {key} before {b} after {a}")
    if d.get("oom_sites_complete") != {"before": True, "after": True}:
        errors.append(f"oom_sites_complete {d.get('oom_sites_complete')}: fewer than 4096 "
                      "sites, all should be listed")
    changes = [s.get("change", 0) for s in d.get("sites", [])]
    if changes != sorted(changes, reverse=True):
        errors.append(f"sites not sorted by change: {changes}")
    t = d.get("totals", {})
    for key, name in (("peak_allocated", "peak"), ("leaked_bytes", "leaked"),
                      ("live_at_fatal_oom", "oom"), ("unrecovered_failures", "fails")):
        got = t.get(key, {})
        b, a = want_b[name], want_a[name]
        if (got.get("before"), got.get("after"), got.get("delta")) != (b, a, a - b):
            errors.append(f"total {key}: diff {got}, truth before {b} after {a}")
    return errors


def run_seed(o, seed):
    rnd = random.Random(seed)
    d = os.path.join(o.work, str(seed))
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(d)
    prog = os.path.join(d, "prog.py")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    before = ops_before(rnd)
    runs = {"before": with_devices(before, o.devices),
            "after": with_devices(ops_after(rnd, before), o.devices)}
    for name, ops in runs.items():
        spec = os.path.join(d, f"{name}.json")
        with open(spec, "w") as f:
            json.dump(ops, f)
        cmd = [o.vramtrace, "run", "--sim=t4", "-o", os.path.join(d, f"{name}.vtrace"), "--",
               sys.executable, prog, spec]
        env = dict(os.environ, VRAMTRACE_SIM_CONTEXT_RESERVE=str(RESERVE),
                   VRAMTRACE_SIM_DEVICES=str(o.devices))
        p = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, errors="replace")
        if p.returncode != 0:
            raise RuntimeError(f"seed {seed}: {' '.join(cmd)} exited {p.returncode}: "
                               f"{p.stderr[-400:]}")
    out = os.path.join(d, "diff.json")
    cmd = [o.vramtrace, "diff", "-q", "--top", "1000", "--json", out,
           os.path.join(d, "before.vtrace"), os.path.join(d, "after.vtrace")]
    p = subprocess.run(cmd, cwd=d, capture_output=True, text=True, errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"seed {seed}: diff exited {p.returncode}: {p.stderr[-400:]}")
    if o.wrong:  # an allocation BEFORE leaks 4096 B larger in the truth
        freed = {op[1] for op in before if op[0] == "f"}
        leak = next((op for op in before if op[0] == "a" and op[3] not in freed), None)
        if leak:
            leak[2] += 4096
    want = {name: truth(ops) for name, ops in runs.items()}
    with open(out) as f:
        errors = check(json.load(f), want["before"], want["after"])
    for name in runs:
        errors += check_exports(o, d, name, want[name])
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    seeds.add_arguments(ap)
    ap.add_argument("--devices", type=int, default=1, help="simulated T4s (each allocation on one)")
    o = ap.parse_args()
    return seeds.run_seeds(lambda seed: run_seed(o, seed), o)


if __name__ == "__main__":
    sys.exit(main())
