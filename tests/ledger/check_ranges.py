#!/usr/bin/env python3
"""Hold a report's peak by NVTX range (its "phases") against the simulated
device's ledger and the program's own record of the range of each of its
allocations (tests/corpus/random.c, CORPUS_RANGES).

usage: check_ranges.py --ledger FILE --ranges FILE --report JSON [--perturb]

The ranges file has one line per device-memory allocation, "a ADDRESS RANGE"
or "h HANDLE RANGE" (a VMM handle), RANGE the allocating thread's innermost
NVTX range then ("-" none), in the order of the allocations at each address.
Replaying the ledger by check_ledger.py's rules (its device kinds: device,
managed, vmm, array), each allocation takes the next range recorded for its
address. At the first moment the live device
memory of all devices is largest (the report's peak), the bytes and
allocations live in each range must be the report's phases, and their sum the
report's peak.

--perturb files one allocation live at the peak under another range (the
test that the check can fail). Exit 0 when everything matches, 1 on a difference (one
line each), 2 on unusable input. Debian python3, stdlib only."""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_ledger import DEVICE_KINDS, Unusable, replay  # noqa: E402 (the ledger's rules)

NO_RANGE = "(no range)"


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


class PeakByRange:
    """A check_ledger watch: device memory live by range, and its composition at
    the first moment its total is largest; perturb: one allocation live then
    filed under another range."""

    def __init__(self, ranges, perturb):
        self.ranges, self.perturb = ranges, perturb
        self.held = {}  # (letter, id) -> (size, range)
        self.total = self.peak = 0
        self.at_peak = {}

    def live(self, ident, device, kind, delta):
        if kind not in DEVICE_KINDS:
            return
        key = ("h" if kind == "vmm" else "a", int(ident, 16))
        if delta > 0:
            if not self.ranges.get(key):
                raise Unusable(f"no range recorded for {key[0]} {key[1]:#x}")
            self.held[key] = (delta, self.ranges[key].popleft())
        else:
            self.held.pop(key)
        self.total += delta
        if self.total > self.peak:
            self.peak = self.total
            self.at_peak = collections.defaultdict(lambda: [0, 0])
            for i, (size, name) in enumerate(self.held.values()):
                if self.perturb and i == 0:
                    name = "r0" if name != "r0" else NO_RANGE
                self.at_peak[name][0] += size
                self.at_peak[name][1] += 1

    def failed(self, line):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--ranges", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--perturb", action="store_true")
    a = ap.parse_args()
    try:
        watch = PeakByRange(read_ranges(a.ranges), a.perturb)
        replay(a.ledger, None, watch)
        peak, want = watch.peak, dict(watch.at_peak)
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
