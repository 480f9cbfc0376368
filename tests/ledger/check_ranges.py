#!/usr/bin/env python3
"""Hold a report's peak by NVTX range (its "phases") against the simulated
device's ledger and the program's own record of the range of each of its
allocations (tests/corpus/random.c, CORPUS_RANGES).

usage: check_ranges.py --ledger FILE --ranges FILE --report JSON [--perturb]

The ranges file has one line per device-memory allocation, "a ADDRESS RANGE"
or "h HANDLE RANGE" (a VMM handle), RANGE the allocating thread's innermost
NVTX range then ("-" none), in the order of the allocations at each address.
Replaying the ledger (alloc/free of kinds device and managed, VMM handles
from creation until released and unmapped everywhere), each allocation takes
the next range recorded for its address. At the first moment the live device
memory of all devices is largest (the report's peak), the bytes and
allocations live in each range must be the report's phases, and their sum the
report's peak.

--perturb files one allocation live at the peak under another range (the
test that the check can fail). Exit 0 when everything matches, 1 on a difference (one
line each), 2 on unusable input. Debian python3, stdlib only."""
import argparse
import collections
import json
import sys

NO_RANGE = "(no range)"


class Unusable(Exception):
    """Input the checker cannot judge (exit status 2)."""


def read_ranges(path):
    """{(kind letter, int id): deque of range names}."""
    ranges = collections.defaultdict(collections.deque)
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 3 or parts[0] not in ("a", "h"):
                raise Unusable(f"{path}:{n}: not 'a|h ID RANGE'")
            ranges[(parts[0], int(parts[1], 16))].append(NO_RANGE if parts[2] == "-" else parts[2])
    return ranges


def peak_by_range(ledger, ranges, perturb=False):
    """(peak bytes, {range: [bytes, count]}) at the first largest moment; perturb:
    one allocation live then filed under another range."""
    live = {}  # (letter, id) -> (size, range)
    handles = {}  # handle -> [mappings, released]
    total = peak = 0
    at_peak = {}

    def born(key, size):
        nonlocal total
        if not ranges.get(key):
            raise Unusable(f"no range recorded for {key[0]} {key[1]:#x}")
        live[key] = (size, ranges[key].popleft())
        total += size

    def died(key):
        nonlocal total
        total -= live.pop(key)[0]

    with open(ledger) as f:
        for n, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                o = json.loads(text)
            except ValueError as e:
                raise Unusable(f"{ledger}:{n}: not JSON ({e})")
            op = o.get("op")
            if op == "exit":
                break
            if op in ("alloc", "free") and o.get("kind") in ("device", "managed"):
                key = ("a", int(o["addr"], 16))
                born(key, o["size"]) if op == "alloc" else died(key)
            elif op == "vmm_create":
                born(("h", int(o["handle"], 16)), o["size"])
                handles[o["handle"]] = [0, False]
            elif op in ("vmm_map", "vmm_unmap", "vmm_release"):
                st = handles[o["handle"]]
                if op == "vmm_map":
                    st[0] += 1
                elif op == "vmm_unmap":
                    st[0] -= 1
                else:
                    st[1] = True
                if st[1] and st[0] == 0:
                    died(("h", int(o["handle"], 16)))
                    del handles[o["handle"]]
            if total > peak:
                peak = total
                at_peak = collections.defaultdict(lambda: [0, 0])
                for i, (size, name) in enumerate(live.values()):
                    if perturb and i == 0:
                        name = "r0" if name != "r0" else NO_RANGE
                    at_peak[name][0] += size
                    at_peak[name][1] += 1
    return peak, dict(at_peak)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--ranges", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--perturb", action="store_true")
    a = ap.parse_args()
    try:
        peak, want = peak_by_range(a.ledger, read_ranges(a.ranges), a.perturb)
        with open(a.report) as f:
            report = json.load(f)
        got = {p["range"]: [p["bytes"], p["count"]] for p in report["phases"]}
        reported_peak = report["totals"]["peak_allocated_bytes"]
    except (OSError, Unusable, ValueError, KeyError) as e:
        print(f"check_ranges: unusable input: {e}", file=sys.stderr)
        return 2
    errors = []
    if reported_peak != peak:
        errors.append(f"peak: report {reported_peak}, ledger {peak}")
    for name in sorted(set(want) | set(got)):
        if want.get(name) != got.get(name):
            errors.append(f"range {name}: report {got.get(name)}, ledger and program "
                          f"{want.get(name)} (bytes, allocations)")
    for e in errors:
        print(f"check_ranges: mismatch: {e}")
    if not errors:
        print(f"check_ranges: ok (peak {peak} bytes in {len(want)} ranges)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
