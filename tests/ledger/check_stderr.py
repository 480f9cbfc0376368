#!/usr/bin/env python3
"""Hold the preload's OOM blocks and exit summary on stderr against the
sim's ledger.

usage: check_stderr.py --ledger LEDGER --stderr STDERR [--pid PID]
                       [--perturb | --perturb-exit | --perturb-live]

Each block (interpose/README.md, "The OOM diagnosis and the exit line")
opens with "vramtrace: OUT OF MEMORY: API of SIZE failed with error E on
device D, free F of T" (pinned host memory's: "API of SIZE of pinned host
memory failed with error E", device -1), has a line "live: L in N
allocations" and, when the device's CUDA graph memory pool held memory, a
line "CUDA graph memory pool reserved: G". Blocks are printed
in the order of their failures, so each is the next of the ledger's "fail"
lines (the same process) with the same api (as the report names it), device,
error and SIZE, leaving out failures a retry recovered (they have no
block); a block "(also its retry)" is that line and the same thread's
failed retries of the same request after it, and shows the last one's
numbers. When failures with the same api, device, error and SIZE come from
more than one thread, which block is which cannot be told (the blocks are
printed in the order the preload saw the failures, not the ledger's): those
blocks are matched but not compared. For each line compared:

* F and T are its "free" and "total" (the device as the sim's cuMemGetInfo
  answered right after the failure), unless another thread's line came
  before the failing thread's next one (check_ledger.py's rule: the device
  may have changed before the preload asked);
* L and N are the failing device's live bytes and allocations in the
  ledger's replay at that line (check_ledger.py's fail_live and
  fail_live_count: the device kinds of the device, host memory for -1);
  the preload counts them under its order lock, so threads do not move them;
* G is its "graph_pool", and a block of a line without one has no pool line.

The exit summary (interpose/README.md; one line per device, and one for
pinned and registered host memory, that had an allocation or a failure)
"peak reserved P, N allocations, live at exit L in K allocations, F failed
allocations" must be the ledger's replay (check_ledger.py's rules): P the
peak of the device's totals (host: of host memory), N its allocations of
every kind, L and K what is live at the end, F its failures. A process
killed before its exit writes no summary: then nothing is compared.

Sizes are compared as the preload prints them: a port of size/vsize.c's
vsize_format (two decimals of the largest 1024-based unit), so a number
that differs only past its second decimal is not caught.
--perturb-exit counts one allocation more on the ledger's first device and
must then fail (with a summary); --perturb-live counts one more live
allocation at the first block whose live line is compared and must then
fail (exit 3 when none is). --perturb adds 5 % (at least 1 MiB) to the ledger's free bytes of the first block whose
free bytes are compared (a sample of the wrong moment) and must then fail.
Exit 0 all hold, 1 a mismatch (each printed), 2 unusable input, 3 with
--perturb when no block's free bytes were compared (nothing to perturb),
with --perturb-live when no block's live line was.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_ledger  # noqa: E402  (its replay and its names of apis)
from check_ledger import report_api  # noqa: E402

BLOCK = re.compile(r"^vramtrace: OUT OF MEMORY: (\S+) of (.+?) failed with error (-?\d+) on device "
                   r"(-?\d+)(?:, free (.+?) of (.+?))?( \(also its retry\))?$")
HOST_BLOCK = re.compile(r"^vramtrace: OUT OF MEMORY: (\S+) of (.+?) of pinned host memory failed "
                        r"with error (-?\d+)( \(also its retry\))?$")
LIVE = re.compile(r"^vramtrace:   live: (.+?) in (\d+) allocations?(?:;|$)")
POOL = re.compile(r"^vramtrace:   CUDA graph memory pool reserved: (.+?) \(")
SUMMARY = re.compile(r"^vramtrace: (?:device (\d+)|host memory \(pinned, registered\)): peak"
                     r"(?: reserved)? (.+?)"
                     r"(?: \(stream-ordered pools reserved (?P<pools>.*?) where sampled\))?"
                     r", (\d+) allocations?, live at exit (.+?) in (\d+) allocations?, (\d+) failed "
                     r"allocations?$")
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def vsize_format(n):
    """size/vsize.c's vsize_format."""
    if n < 1024:
        return f"{n} B"
    v, i = n / 1024.0, 1
    while v >= 1023.995 and i + 1 < len(UNITS):
        v, i = v / 1024.0, i + 1
    return f"{v:.2f} {UNITS[i]}"


def read_blocks(path):
    """[{api, size, error, device, free, total, pool, live}] of stderr's OOM
    blocks (pinned host memory's: device -1, no device free bytes); live:
    (bytes text, allocations) of the block's "live:" line."""
    blocks = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for text in f:
            text = text.rstrip("\n")
            m, h = BLOCK.match(text), HOST_BLOCK.match(text)
            if m:
                api, size, err, dev, fr, to, retry = m.groups()
            elif h:
                (api, size, err, retry), dev, fr, to = h.groups(), -1, None, None
            elif blocks and POOL.match(text):
                blocks[-1]["pool"] = POOL.match(text).group(1)
            elif blocks and LIVE.match(text):
                lv = LIVE.match(text)
                blocks[-1]["live"] = (lv.group(1), int(lv.group(2)))
            if m or h:
                blocks.append({"api": api, "size": size, "error": int(err), "device": int(dev),
                               "free": fr, "total": to, "pool": None, "retry": bool(retry),
                               "live": None})
    return blocks


def read_fails(path, pid, proc):
    """The ledger's fail lines of pid (or of the only process) up to its
    exit, each with diagnose.c's rules applied to the ledger's order (the
    thread's frees and other lines do not count; its allocations and
    failures do): "retry_of", the fail it retries (the thread's previous
    allocation or failure was a fail of the same call, size and device, and
    no other thread failed since); "recovered", the thread's next allocation
    was of the same size on the same device and no other thread failed
    before it (no block); "racy", the same with another thread's failure
    before it, which prints the block if the preload saw it first (a block
    or none); "contended", another thread failed while this failure was
    pending (which the preload saw first may differ); and from check_ledger's replay proc (the same fails
    in the same order), "alone" (fail_alone) and "live", the failing
    device's live bytes and allocations (fail_live, fail_live_count)."""
    fails, pending, last, last_fail = [], {}, {}, None
    with open(path, encoding="utf-8") as f:
        for text in f:
            if not text.strip():
                continue
            o = json.loads(text)  # the replay read the same lines
            if pid is not None and o.get("pid") != pid:
                continue
            tid, op = o.get("tid"), o.get("op")
            if op == "exit":
                break
            if op not in ("alloc", "fail"):
                continue
            prev = last.get(tid)
            pending.pop(tid, None)
            same = prev is not None and prev.get("op") == "fail" and all(
                o.get(k) == prev.get(k) for k in ("device", "size"))
            if same and op == "alloc":  # recovered, unless another thread's failure
                # printed it first (diagnose.c keeps one failure pending); in
                # which order the preload saw the two is a race
                prev["racy" if prev.get("contended") else "recovered"] = True
            if op == "fail":
                retry = same and last_fail is prev and \
                    report_api(o.get("api", "")) == report_api(prev.get("api", ""))
                i = len(fails)
                o.update(alone=proc.fail_alone[i], recovered=False, contended=bool(pending),
                         retry_of=prev if retry else None,
                         live=(proc.fail_live[i], proc.fail_live_count[i]))
                for k in pending.values():
                    fails[k]["contended"] = True
                fails.append(o)
                pending[tid] = len(fails) - 1
                last_fail = o
            last[tid] = o
    return fails


def key(api, device, error, size_text):
    return (api, device, error, size_text)


def queues(fails):
    """{key: [request, ...]}: each request the list of a first fail and its
    failed retries, in ledger order, recovered ones left out; and the keys
    whose requests came from more than one thread (their blocks' order is
    not the ledger's: which block is which request cannot be told)."""
    q, tids = {}, {}
    for o in fails:
        k = key(report_api(o.get("api", "")), o.get("device"), o.get("error"),
                vsize_format(o.get("size", -1)))
        tids.setdefault(k, set()).add(o.get("tid"))
        if o["retry_of"] is not None and q.get(k) and q[k][-1][-1] is o["retry_of"]:
            q[k][-1].append(o)
        else:
            q.setdefault(k, []).append([o])
    for k in q:
        q[k] = [r for r in q[k] if not r[-1]["recovered"]]
    racy = {k for k in q if any(r[-1].get("racy") for r in q[k])}
    return q, {k for k, t in tids.items() if len(t) > 1} | racy


def compare(blocks, fails, perturb=False, perturb_live=False):
    """(mismatch messages, how many blocks had their free bytes compared,
    how many their live line)."""
    problems, compared, live_compared = [], 0, 0
    q, ambiguous = queues(fails)
    for b, blk in enumerate(blocks, 1):
        k = key(blk["api"], blk["device"], blk["error"], blk["size"])
        if not q.get(k):
            problems.append(f"block {b} ({blk['api']} of {blk['size']} on device "
                            f"{blk['device']}): no such failure left in the ledger")
            continue
        request = q[k].pop(0)
        if k in ambiguous:
            continue
        if blk["retry"] != (len(request) > 1) and not any(o["contended"] for o in request):
            problems.append(f"block {b}: {len(request)} failed attempt(s) in the ledger, "
                            f"stderr {'says' if blk['retry'] else 'does not say'} "
                            "\"(also its retry)\"")
        o = request[-1]  # the block shows the last attempt's numbers
        if "free" in o and o["alone"]:
            moved = max(1 << 20, o["free"] // 20) if perturb and not compared else 0
            want = (vsize_format(o["free"] + moved), vsize_format(o["total"]))
            compared += 1
            if (blk["free"], blk["total"]) != want:
                problems.append(f"block {b}: device free of total: stderr {blk['free']} of "
                                f"{blk['total']}, ledger {want[0]} of {want[1]}")
        nbytes, count = o["live"]
        want = (vsize_format(nbytes), count + (1 if perturb_live and not live_compared else 0))
        live_compared += 1
        if blk["live"] != want:
            problems.append(f"block {b}: live: stderr {blk['live']}, ledger {want}")
        gp = o.get("graph_pool")
        want = vsize_format(gp) if gp else None
        if blk["pool"] != want:
            problems.append(f"block {b}: graph memory pool reserved: stderr {blk['pool']}, "
                            f"ledger {want}")
    return problems, compared, live_compared


def read_summary(path):
    """{device (-1: host): (peak text, allocations, live text, live count,
    failures)} of the exit summary's lines, and {device: the stream-ordered
    pools' reserved text} of those that say it."""
    got, pools = {}, {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for text in f:
            m = SUMMARY.match(text.rstrip("\n"))
            if m:
                dev = int(m.group(1)) if m.group(1) is not None else -1
                got[dev] = (m.group(2), int(m.group(4)), m.group(5), int(m.group(6)),
                            int(m.group(7)))
                if m.group("pools") is not None:
                    pools[dev] = m.group("pools")
    return got, pools


def size_bytes(text):
    """Bytes of a vsize_format text ("256.00 MiB"); None if it is none."""
    m = re.match(r"^([0-9]+(?:\.[0-9]+)?) (\S+)$", text)
    if not m or m.group(2) not in UNITS:
        return None
    return float(m.group(1)) * 1024 ** UNITS.index(m.group(2))


def compare_pools(pools, proc, perturb=False):
    """Mismatch messages of the exit lines' "stream-ordered pools reserved X
    where sampled": X at most the most the ledger's pools reserved at once
    on the device (pool_grow, pool_release), within the text's two
    decimals; perturb: that most taken a tenth smaller."""
    problems = []
    for dev, text in sorted(pools.items()):
        got, peak = size_bytes(text), proc.pool_peak.get(dev, 0)
        if perturb:
            peak -= peak // 10
        if got is None or got > peak * 1.005:
            problems.append(f"exit summary of device {dev}: stream-ordered pools reserved "
                            f"{text}, more than the ledger's pools ever reserved at once "
                            f"({vsize_format(peak)})")
    return problems


def compare_summary(got, proc, perturb=False):
    """Mismatch messages of the exit summary against the ledger's replay."""
    if not got:
        return []
    per = {}
    for (dev, _kind), r in proc.result().items():
        w = per.setdefault(dev, [0, 0, 0, 0])
        for i, k in enumerate(("allocations", "leaked_bytes", "leaked_allocations", "failed")):
            w[i] += r[k]
    peaks, _ = proc.device_peaks()
    if perturb and per:
        per[min(d for d in per if d >= 0) if any(d >= 0 for d in per) else -1][0] += 1
    problems = []
    for dev in sorted(set(got) | {d for d, w in per.items() if w[0] or w[3]}):
        w = per.get(dev, [0, 0, 0, 0])
        peak = proc.host_peak if dev < 0 else peaks.get(dev, 0)
        want = (vsize_format(peak), w[0], vsize_format(w[1]), w[2], w[3])
        if got.get(dev) != want:
            problems.append(f"exit summary of {'host memory' if dev < 0 else f'device {dev}'}: "
                            f"stderr {got.get(dev)}, ledger {want}")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ledger", required=True)
    ap.add_argument("--stderr", required=True)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--perturb", action="store_true")
    ap.add_argument("--perturb-exit", action="store_true")
    ap.add_argument("--perturb-live", action="store_true")
    args = ap.parse_args(argv)
    try:
        proc = check_ledger.replay(args.ledger, args.pid)
        blocks, fails = read_blocks(args.stderr), read_fails(args.ledger, args.pid, proc)
        summary, pools = read_summary(args.stderr)
        problems = compare_summary(summary, proc, args.perturb_exit)
        problems += compare_pools(pools, proc, args.perturb_exit)
    except (OSError, check_ledger.Unusable) as e:
        print(f"check_stderr: {e}", file=sys.stderr)
        return 2
    more, compared, live_compared = compare(blocks, fails, args.perturb, args.perturb_live)
    problems += more
    if args.perturb and not compared:
        print("check_stderr: --perturb: no block's free bytes were compared")
        return 3
    if args.perturb_live and not live_compared:
        print("check_stderr: --perturb-live: no block's live line was compared")
        return 3
    for p in problems:
        print(f"check_stderr: mismatch: {p}")
    if not problems:
        print(f"check_stderr: {len(blocks)} OOM block(s) (free bytes compared in {compared}, "
              f"live in {live_compared}) "
              f"and {len(summary)} exit summary line(s) match the ledger")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
