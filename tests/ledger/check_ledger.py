#!/usr/bin/env python3
"""Hold a vramtrace report's "accounting" section against the simulated
device's ledger (the independent ground truth).

usage: check_ledger.py --ledger FILE --report JSON [--pid P]

The ledger (VRAMTRACE_SIM_LEDGER, sim/README.md "Ledger") holds one JSON
object per line. From the lines of one process (--pid, or the only pid in the
file) this recomputes, per (device, kind), every field of the report's
"accounting" array (docs: the contract between sim/ and report/):
allocations, frees, failed, peak_live_bytes, live_bytes_at_failures,
leaked_bytes, leaked_allocations; prints each difference and exits 1 on any,
0 when all match, 2 on unusable input (a missing or malformed file, a report
without "accounting", a ledger that contradicts itself).

Rules: an allocation is live from its "alloc" line to its "free" line; a VMM
handle (kind "vmm") is live from "vmm_create" until it is released and its
last mapping is unmapped; a "fail" records the live bytes of its own (device,
kind) at that moment; what is live at the "exit" line (or at the end of the
ledger when the process died without one) is leaked. Debian python3, stdlib
only.
"""
import argparse
import json
import sys

FIELDS = ("allocations", "frees", "failed", "peak_live_bytes",
          "live_bytes_at_failures", "leaked_bytes", "leaked_allocations")


class Unusable(Exception):
    """Input the checker cannot judge (exit status 2)."""


class Key:
    """The running numbers of one (device, kind)."""

    def __init__(self):
        self.allocations = self.frees = self.failed = 0
        self.live_bytes = self.peak = 0
        self.live = {}  # addr or handle -> size
        self.at_failures = []

    def born(self, ident, size, where):
        if ident in self.live:
            raise Unusable(f"{where}: {ident} is already live")
        self.live[ident] = size
        self.allocations += 1
        self.live_bytes += size
        self.peak = max(self.peak, self.live_bytes)

    def died(self, ident, where):
        if ident not in self.live:
            raise Unusable(f"{where}: {ident} is not live")
        self.live_bytes -= self.live.pop(ident)
        self.frees += 1

    def result(self):
        return {"allocations": self.allocations, "frees": self.frees,
                "failed": self.failed, "peak_live_bytes": self.peak,
                "live_bytes_at_failures": list(self.at_failures),
                "leaked_bytes": self.live_bytes,
                "leaked_allocations": len(self.live)}


def read_ledger(path, pid):
    """The ledger lines of one process, in the sim's order (seq)."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read().splitlines()
    except OSError as e:
        raise Unusable(f"cannot read ledger {path}: {e.strerror}") from e
    lines = []
    for n, text in enumerate(raw, 1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise Unusable(f"{path}:{n}: not JSON: {e}") from e
        if not isinstance(obj, dict) or not {"seq", "pid", "op"} <= obj.keys():
            raise Unusable(f"{path}:{n}: not a ledger line")
        obj["_where"] = f"{path}:{n}"
        lines.append(obj)
    pids = sorted({o["pid"] for o in lines})
    if pid is None:
        if len(pids) != 1:
            raise Unusable(f"{path}: the ledger holds pids {pids}; pick one with --pid")
        pid = pids[0]
    mine = sorted((o for o in lines if o["pid"] == pid), key=lambda o: o["seq"])
    if not mine:
        raise Unusable(f"{path}: no ledger line of pid {pid}")
    return mine


def field(obj, name):
    if name not in obj:
        raise Unusable(f"{obj['_where']}: no \"{name}\"")
    return obj[name]


def replay(lines):
    """(device, kind) -> Key, the state at exit."""
    keys = {}
    handles = {}  # handle -> [device, size, mappings, released]

    def key(device, kind):
        return keys.setdefault((device, kind), Key())

    def vmm_maybe_dies(h, o):
        dev, _, maps, released = handles[h]
        if released and maps == 0:
            key(dev, "vmm").died(h, o["_where"])
            del handles[h]

    for o in lines:
        op, where = o["op"], o["_where"]
        if op == "exit":
            break
        if op == "alloc":
            key(field(o, "device"), field(o, "kind")).born(field(o, "addr"), field(o, "size"), where)
        elif op == "free":
            key(field(o, "device"), field(o, "kind")).died(field(o, "addr"), where)
        elif op == "fail":
            k = key(field(o, "device"), field(o, "kind"))
            k.failed += 1
            k.at_failures.append(k.live_bytes)
        elif op == "vmm_create":
            h = field(o, "handle")
            key(field(o, "device"), "vmm").born(h, field(o, "size"), where)
            handles[h] = [o["device"], o["size"], 0, False]
        elif op in ("vmm_map", "vmm_unmap", "vmm_release"):
            h = field(o, "handle")
            if h not in handles:
                raise Unusable(f"{where}: {op} of unknown handle {h}")
            if op == "vmm_map":
                handles[h][2] += 1
            elif op == "vmm_unmap":
                if handles[h][2] == 0:
                    raise Unusable(f"{where}: unmap of unmapped handle {h}")
                handles[h][2] -= 1
            else:
                if handles[h][3]:
                    raise Unusable(f"{where}: handle {h} released twice")
                handles[h][3] = True
            vmm_maybe_dies(h, o)
        elif op != "bad_free":
            raise Unusable(f"{where}: unknown op {op!r}")
    return {k: v.result() for k, v in keys.items()}


def read_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise Unusable(f"cannot read report {path}: {e.strerror}") from e
    except ValueError as e:
        raise Unusable(f"{path}: not JSON: {e}") from e
    acc = report.get("accounting") if isinstance(report, dict) else None
    if not isinstance(acc, list):
        raise Unusable(f"{path}: no \"accounting\" array")
    out = {}
    for entry in acc:
        if not isinstance(entry, dict) or "device" not in entry or "kind" not in entry:
            raise Unusable(f"{path}: accounting entry without device and kind: {entry!r}")
        k = (entry["device"], entry["kind"])
        if k in out:
            raise Unusable(f"{path}: accounting lists device {k[0]} kind {k[1]} twice")
        out[k] = entry
    return out


def compare(expected, reported):
    """Mismatch messages, one per differing number or missing entry."""
    problems = []

    def name(k):
        return f"device {k[0]} kind {k[1]}"

    for k in sorted(expected.keys() | reported.keys(), key=lambda k: (k[0], k[1])):
        if k not in reported:
            problems.append(f"{name(k)}: in the ledger {expected[k]}, missing from the report")
            continue
        if k not in expected:
            problems.append(f"{name(k)}: in the report, no such event in the ledger")
            continue
        for f in FIELDS:
            want, got = expected[k][f], reported[k].get(f, "<missing>")
            if want != got:
                problems.append(f"{name(k)}: {f}: report {got}, ledger {want}")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--pid", type=int)
    args = ap.parse_args(argv)
    try:
        expected = replay(read_ledger(args.ledger, args.pid))
        reported = read_report(args.report)
    except Unusable as e:
        print(f"check_ledger: {e}", file=sys.stderr)
        return 2
    problems = compare(expected, reported)
    for p in problems:
        print(f"check_ledger: mismatch: {p}")
    if not problems:
        print(f"check_ledger: report matches the ledger ({len(expected)} device/kind entries)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
