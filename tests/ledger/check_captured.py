#!/usr/bin/env python3
"""Hold a report's bytes made during CUDA graph captures (docs/report.md,
"CUDA graphs") against the simulated device's ledger and the program's own
record of which of its allocations its threads made inside their captures
(tests/corpus/graphs_random.c, CORPUS_CAPTURED).

usage: check_captured.py --ledger FILE --captured FILE --report JSON [--perturb]

The captured file has one line per device allocation, "a ADDRESS C" (C 1:
made while its thread had a capture open that it began), in the order of
the allocations at each address. Replaying the ledger by check_ledger.py's
rules, each device's live bytes and the captured part of them are followed:
at the first moment the device's live bytes are largest (the report's peak
reserved of direct allocations) and at the end they must be the report's
devices[].captured_at_peak_bytes and captured_at_exit_bytes, and at each
failed allocation (the ledger's fail lines, as check_ledger.py pairs them
with the report's ooms[]) the failing device's captured live bytes its
live_captured_bytes.

--perturb takes the first captured allocation live at the peak as not
captured (the test that the check can fail). Exit 0 when everything
matches, 1 on a difference (one line each), 2 on unusable input."""
import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_ledger import DEVICE_KINDS, Unusable, listed_failures, replay  # noqa: E402


def read_captured(path):
    """{int address: deque of bool}."""
    out = collections.defaultdict(collections.deque)
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 3 or parts[0] != "a" or parts[2] not in ("0", "1"):
                raise Unusable(f"{path}:{n}: not 'a ADDRESS 0|1'")
            out[int(parts[1], 16)].append(parts[2] == "1")
    return out


class Captured:
    """A check_ledger watch: per device, live bytes and the captured part."""

    def __init__(self, captured, perturb):
        self.captured, self.perturb = captured, perturb
        self.held = {}  # address -> (device, size, captured)
        self.bytes = collections.Counter()
        self.cap = collections.Counter()
        self.peak = collections.Counter()
        self.cap_at_peak = collections.Counter()
        self.at_fail, self.fail_oom = [], []  # per fail line: captured live, out of memory

    def live_change(self, device, size, captured, sign):
        self.bytes[device] += sign * size
        self.cap[device] += sign * size if captured else 0
        if self.bytes[device] > self.peak[device]:
            self.peak[device] = self.bytes[device]
            self.cap_at_peak[device] = self.cap[device] - (self.flip(device) if self.perturb else 0)

    def flip(self, device):
        """The size of the first captured allocation live on device."""
        return next((s for d, s, c in self.held.values() if d == device and c), 0)

    def live(self, ident, device, kind, delta):
        if kind not in DEVICE_KINDS:
            return
        addr = int(ident, 16)
        if delta > 0:
            if not self.captured.get(addr):
                raise Unusable(f"no record of the allocation at {addr:#x}")
            c = self.captured[addr].popleft()
            self.held[addr] = (device, delta, c)
            self.live_change(device, delta, c, 1)
        else:
            d, size, c = self.held.pop(addr)
            self.live_change(d, size, c, -1)

    def failed(self, line):
        self.at_fail.append(self.cap[line["device"]] if line["device"] >= 0 else 0)
        self.fail_oom.append(line.get("error") == 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--captured", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--perturb", action="store_true")
    a = ap.parse_args()
    try:
        watch = Captured(read_captured(a.captured), a.perturb)
        replay(a.ledger, None, watch)
        with open(a.report) as f:
            report = json.load(f)
        devices = {d["id"]: d for d in report["devices"]}
        ooms = report["ooms"]
        kept = listed_failures(len(ooms), watch.fail_oom)
    except (OSError, Unusable, ValueError, KeyError) as e:
        print(f"check_captured: unusable input: {e}", file=sys.stderr)
        return 2
    errors = []
    for dev in sorted(set(watch.peak) | set(devices)):
        d = devices.get(dev, {})
        want = (watch.peak[dev], watch.cap_at_peak[dev], watch.cap[dev])
        got = (d.get("peak_reserved_bytes"), d.get("captured_at_peak_bytes"),
               d.get("captured_at_exit_bytes"))
        print(f"device {dev}: peak, captured at the peak, captured at exit: report {got}, "
              f"ledger and program {want}")
        if got != want:
            errors.append(f"device {dev}: report {got}, ledger and program {want}")
    for o, k in zip(ooms, kept):
        if o.get("live_captured_bytes") != watch.at_fail[k]:
            errors.append(f"failed allocation {k + 1}: live_captured_bytes: report "
                          f"{o.get('live_captured_bytes')}, ledger and program {watch.at_fail[k]}")
    print(f"{len(ooms)} failed allocations: the captured live bytes at each compared")
    for e in errors:
        print(f"check_captured: mismatch: {e}")
    if not errors:
        print("check_captured: ok")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
