#!/usr/bin/env python3
"""Hold each failed allocation of a vramtrace report against the allocator's
own state at that failure (the independent truth), and its verdict against
the rule docs/report.md gives, applied to those numbers.

usage: oom_truth_check.py --report JSON --log OOMLOG [--perturb]

OOMLOG is `train --oom-log`'s file: one JSON line per failed device malloc,
written by the GAN's allocator itself (gan_workload/alloc/alloc.h,
ga_failure): requested, retry, allocated, reserved, largest_free,
device_free, device_total (bytes). The report's ooms[] are the same
failures in the same order (both count every failed device malloc, a retry
included). For each pair:

* numbers: requested_bytes, live_allocated_bytes (= allocated: the regions
  the allocator registered are its blocks), live_reserved_bytes
  (= reserved: its segments), heap_free_bytes (= reserved - allocated),
  heap_largest_free_bytes (= largest_free), device_free_bytes,
  device_total_bytes, outside_recording_bytes (= device_total -
  device_free - reserved: the device's use by anything but the allocator);
* verdict: fragmentation when the free memory was there but not where the
  request could use it (request <= cache free + device free, and allocated
  + request + outside <= device total: the cache's blocks too small, or in
  another pool than the request's), else capacity. A *leak* verdict comes before
  both (growth across iterations, which the allocator does not know): its
  numbers are compared, not its verdict; *external* never (nothing outside
  the process grows on the simulated device);
* the claim of a capacity verdict's text, "live data + the request exceed
  the device", holds with the report's own numbers; where it holds only
  with the request as the driver allocates it (sim/README.md "Rounding":
  a multiple of 512 bytes under 2 MiB, of 2 MiB from there; the direct
  allocator's 15.50 MiB request fails with 15.85 MiB free), the text must
  say so ("as the driver allocates it").

--perturb changes the report's first fragmentation verdict to capacity (what
vramtrace said of a failure whose free memory was split between the cache
and the device before 2026-11-29) and must then fail.
Exit 0 all hold, 1 a mismatch (each printed), 2 unusable input.
"""
import argparse
import json
import sys


def unusable(why):
    """Exit 2: input the checker cannot judge."""
    print(f"oom_truth_check: unusable input: {why}", file=sys.stderr)
    sys.exit(2)


def load(report_path, log_path):
    try:
        with open(report_path) as f:
            ooms = json.load(f)["ooms"]
        with open(log_path) as f:
            log = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError, KeyError, TypeError) as e:
        unusable(e)
    return ooms, log


def expected_verdict(t):
    """The verdict docs/report.md's rule gives for allocator state t."""
    req, cache_free = t["requested"], t["reserved"] - t["allocated"]
    outside = t["device_total"] - t["device_free"] - t["reserved"]
    in_pieces = (cache_free > 0 and req <= cache_free + t["device_free"]
                 and t["allocated"] + req + outside <= t["device_total"])
    return "fragmentation" if in_pieces else "capacity"


def driver_rounded(size):
    """The device memory the driver takes for a request of size bytes
    (sim/README.md "Rounding")."""
    g = 512 if size < (2 << 20) else 2 << 20
    return -(-size // g) * g


def compare(n, o, t):
    """Mismatch messages of report failure o against allocator state t."""
    want = {
        "requested_bytes": t["requested"],
        "live_allocated_bytes": t["allocated"],
        "live_reserved_bytes": t["reserved"],
        "heap_free_bytes": t["reserved"] - t["allocated"],
        "heap_largest_free_bytes": t["largest_free"],
        "device_free_bytes": t["device_free"],
        "device_total_bytes": t["device_total"],
        "outside_recording_bytes": t["device_total"] - t["device_free"] - t["reserved"],
        "verdict": o.get("verdict") if o.get("verdict") == "leak" else expected_verdict(t),
    }
    bad = [f"failure {n}: {k}: report {o.get(k)}, allocator {v}"
           for k, v in want.items() if o.get(k) != v]
    parts = [o.get(k) for k in ("live_allocated_bytes", "requested_bytes",
                                "outside_recording_bytes", "device_total_bytes")]
    if o.get("verdict") == "capacity" and all(isinstance(v, int) for v in parts):
        need = sum(parts[:3])
        taken = need - parts[1] + driver_rounded(parts[1])
        said = "as the driver allocates it" in o.get("explanation", "")
        if taken <= parts[3]:
            bad.append(f"failure {n}: verdict capacity, but live data + request + outside "
                       f"({taken} with the driver's rounding of the request) do not exceed the "
                       f"device ({o['device_total_bytes']})")
        elif need <= parts[3] and not said:
            bad.append(f"failure {n}: live data + request + outside ({need}, the device "
                       f"{o['device_total_bytes']}) exceed the device only with the driver's "
                       "rounding of the request, which the text does not give")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--report", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--perturb", action="store_true")
    a = ap.parse_args()
    ooms, log = load(a.report, a.log)
    if not log:
        unusable("the allocator logged no failure")
    if a.perturb:
        frag = [o for o in ooms if o.get("verdict") == "fragmentation"]
        if not frag:
            unusable("--perturb needs a fragmentation verdict")
        frag[0]["verdict"] = "capacity"
    bad = [] if len(ooms) == len(log) else [
        f"the report lists {len(ooms)} failures, the allocator logged {len(log)}"]
    for n, (o, t) in enumerate(zip(ooms, log), 1):
        bad += compare(n, o, t)
    for b in bad:
        print(f"oom_truth_check: MISMATCH: {b}")
    if bad:
        return 1
    verdicts = ", ".join(o["verdict"] for o in ooms)
    print(f"oom_truth_check: ok: {len(ooms)} failures match the allocator ({verdicts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
