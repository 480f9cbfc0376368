#!/usr/bin/env python3
"""Hold a `vramtrace report --memory-viz` snapshot taken at a fatal failure
against the simulated device's ledger (the independent ground truth).

usage: check_memviz.py --ledger FILE --snapshot PICKLE --report JSON [--pid P] [--perturb]

The snapshot is taken at the run's last out-of-memory failure of device
memory that was not recovered (report/memviz.c; PyTorch's OOM observer does
the same): that entry of the report's ooms, the n-th failed allocation of the
run, is the n-th "fail" line of the ledger (the report's last entry is the
latest: it keeps the first failures and always the latest). Its segments must be
exactly the device and managed allocations the ledger has live at that
failure, on every device: the same (device, address, size) triples, one
block each (a run without NVTX heaps). Its device_traces, replayed
(segment_alloc adds, segment_free removes), must end in the same set, and
each device's trace must end with that failure's "oom" action when the
failure was on it. Pinned host memory and VMM handles are not exported
(memviz.c), so they are not compared.

--perturb moves one live allocation of the ledger by 512 bytes (the test
that the check can fail). Exit 0 when everything matches, 1 on a difference
(one line each), 2 on unusable input (no fatal failure in the ledger, a
malformed file). Debian python3, stdlib only."""
import argparse
import json
import pickle
import sys

EXPORTED = ("device", "managed")


class Unusable(Exception):
    """Input the checker cannot judge (exit status 2)."""


def ledger_lines(path, pid):
    """The ledger's lines of one process (the only one when pid is None)."""
    lines = []
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                lines.append(json.loads(text))
            except ValueError as e:
                raise Unusable(f"{path}:{n}: not JSON ({e})")
    pids = {e.get("pid") for e in lines}
    if pid is None:
        if len(pids) != 1:
            raise Unusable(f"{path}: {len(pids)} processes, name one with --pid")
        pid = pids.pop()
    return [e for e in lines if e.get("pid") == pid]


def fatal_index(path):
    """Which failed allocation of the run the report's fatal one is (0-based), and how
    many the report lists."""
    with open(path) as f:
        try:
            ooms = json.load(f)["ooms"]
        except (ValueError, KeyError) as e:
            raise Unusable(f"{path}: no JSON report with ooms ({e})")
    fatal = [i for i, o in enumerate(ooms) if not o.get("recovered")
             and o.get("verdict") != "error" and o.get("device", -1) >= 0]
    if not fatal:
        raise Unusable(f"{path}: no device out-of-memory failure: the snapshot is not taken at one")
    return fatal[-1], len(ooms)


def live_at_fatal(lines, index, listed):
    """The exported allocations live at the index-th failure: {(device, addr): size},
    and that failure's device."""
    fails = [i for i, e in enumerate(lines) if e.get("op") == "fail"]
    if len(fails) < listed:
        raise Unusable(f"the ledger has {len(fails)} failed allocations, the report lists "
                       f"{listed}")
    # a report keeps the first failures and, past its cap, always the latest
    # out-of-memory one in its last slot (report/oom.c, VR_MAX_OOMS)
    if index == listed - 1 and len(fails) > listed:
        index = max(k for k in range(listed - 1, len(fails))
                    if k == listed - 1 or lines[fails[k]].get("error") == 2)
    last = fails[index]
    live = {}
    for e in lines[:last]:
        if e.get("kind") not in EXPORTED or e.get("op") not in ("alloc", "free"):
            continue
        key = (e["device"], int(e["addr"], 16))
        if e["op"] == "alloc":
            live[key] = e["size"]
        elif e["op"] == "free":
            live.pop(key, None)
    return live, lines[last]["device"]


def snapshot_segments(snap):
    """{(device, address): total_size} of the snapshot's segments; each must hold one
    block of its whole size."""
    segs, errors = {}, []
    for s in snap.get("segments", []):
        key = (s["device"], s["address"])
        if key in segs:
            errors.append(f"segment at device {key[0]} address {key[1]:#x} twice")
        segs[key] = s["total_size"]
        blocks = s.get("blocks", [])
        if len(blocks) != 1 or blocks[0]["size"] != s["total_size"]:
            errors.append(f"segment {key[1]:#x}: {len(blocks)} blocks, expected one of its size")
    return segs, errors


def replay_traces(snap):
    """{(device, addr): size} after replaying device_traces' segment actions, and the
    last action of each device's trace."""
    live, last = {}, {}
    for device, trace in enumerate(snap.get("device_traces", [])):
        for t in trace:
            key = (device, t.get("addr"))
            if t["action"] == "segment_alloc":
                live[key] = t["size"]
            elif t["action"] == "segment_free":
                live.pop(key, None)
        if trace:
            last[device] = trace[-1]["action"]
    return live, last


def compare(name, got, want, errors):
    for key in sorted(set(got) | set(want)):
        g, w = got.get(key), want.get(key)
        if g != w:
            errors.append(f"{name}: device {key[0]} address {key[1]:#x}: snapshot {g}, ledger {w}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--snapshot", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--perturb", action="store_true")
    a = ap.parse_args()
    try:
        index, listed = fatal_index(a.report)
        want, device = live_at_fatal(ledger_lines(a.ledger, a.pid), index, listed)
        with open(a.snapshot, "rb") as f:
            snap = pickle.load(f)
    except (OSError, Unusable, pickle.UnpicklingError, KeyError, EOFError, ValueError) as e:
        print(f"check_memviz: unusable input: {e}", file=sys.stderr)
        return 2
    if a.perturb and want:
        key = sorted(want)[0]
        want[key] += 512
    segs, errors = snapshot_segments(snap)
    compare("segments", segs, want, errors)
    replayed, last = replay_traces(snap)
    compare("device_traces replayed", replayed, want, errors)
    if last.get(device) != "oom":
        errors.append(f"device {device}'s trace ends with {last.get(device)!r}, not the oom")
    for e in errors:
        print(f"check_memviz: mismatch: {e}")
    if not errors:
        print(f"check_memviz: ok ({len(want)} live allocations at the fatal failure)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
