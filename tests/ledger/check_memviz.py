#!/usr/bin/env python3
"""Hold a `vramtrace report --memory-viz` snapshot taken at a fatal failure
against the simulated device's ledger (the independent ground truth).

usage: check_memviz.py --ledger FILE --snapshot PICKLE --report JSON [--pid P] [--perturb]

The snapshot is taken at the run's last out-of-memory failure of device
memory that was not recovered (report/memviz.c; PyTorch's OOM observer does
the same): that entry of the report's ooms is a "fail" line of the ledger
(check_ledger.listed_failures), and the ledger is replayed by check_ledger's
rules. Its segments must be exactly the device and managed allocations the
ledger has live at that failure, on every device: the same (device, address, size) triples, one
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
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_ledger import Unusable, listed_failures, replay  # noqa: E402 (the ledger's rules)

EXPORTED = ("device", "managed")


def fatal_index(path):
    """Which entry of the report's ooms the snapshot's failure is (0-based), and how
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


class LiveAtFailure:
    """A check_ledger watch: the exported allocations live at the ledger's failure
    number `at` (0-based), {(device, addr): size}, and that failure's device."""

    def __init__(self, at):
        self.at, self.seen = at, 0
        self.held, self.snapshot, self.device = {}, None, None

    def live(self, ident, device, kind, delta):
        if kind not in EXPORTED:
            return
        key = (device, int(ident, 16))
        if delta > 0:
            self.held[key] = delta
        else:
            self.held.pop(key, None)

    def failed(self, line):
        if self.seen == self.at:
            self.snapshot, self.device = dict(self.held), line["device"]
        self.seen += 1


def live_at_fatal(ledger, pid, index, listed):
    """The exported allocations live at the report's index-th listed failure, and
    its device: two replays of the ledger, one to map the report's entries
    to the ledger's failures (listed_failures), one to stop there."""
    at = listed_failures(listed, replay(ledger, pid).fail_oom)[index]
    watch = LiveAtFailure(at)
    replay(ledger, pid, watch)
    return watch.snapshot, watch.device


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
        want, device = live_at_fatal(a.ledger, a.pid, index, listed)
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
